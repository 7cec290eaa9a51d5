#include "tinylm/kernels/optim/adam.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinylm/core/parallel.h"
#include "tinylm/core/py_math.h"
#include "tinylm/kernels/cpu/level.h"

// Plain loops, vectorized by the compiler at each level: elementwise, so every level computes
// the same bits (there is no sum to reorder, and std::fma is exact everywhere).
TINYLM_LEVEL_BEGIN

namespace {

// Branch-free forms of the tests in py_square / py_sqrt, so the loops vectorize.
bool square_is_safe(double x, double sq) {
  const double lo = std::fma(x, x, -sq);
  return static_cast<int>(
             ::tinylm::detail::exponent_within(x, ::tinylm::detail::kSquareExponentLimit)) &
         static_cast<int>(std::fabs(lo) <
                          ::tinylm::detail::kSafeUlps * ::tinylm::detail::ulp_of(sq));
}
bool sqrt_is_safe(double x, double s) {
  const double r = std::fma(-s, s, x);
  return static_cast<int>(
             ::tinylm::detail::exponent_within(x, ::tinylm::detail::kSqrtExponentLimit)) &
         static_cast<int>(std::fabs(r) <
                          2.0 * ::tinylm::detail::kSafeUlps * ::tinylm::detail::ulp_of(s) * s);
}

// Calls fn(i) for each i with flag[i] set, skipping eight clear flags at a time.
template <class Fn>
void for_each_flagged(const uint8_t* flag, int64_t n, Fn&& fn) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, flag + i, 8);
    if (word == 0) continue;
    for (int64_t k = 0; k < 8; ++k) {
      if (flag[i + k]) fn(i + k);
    }
  }
  for (; i < n; ++i) {
    if (flag[i]) fn(i);
  }
}

// Elements [i0, i1). The arrays are declared apart and the scalars taken by value, or the
// compiler must assume each store may change them and leaves the loop scalar.
void adam_range(float* __restrict pp, float* __restrict gp, float* __restrict mp,
                float* __restrict vp, int64_t i0, int64_t i1, const AdamStepF32 k) {
  for (int64_t i = i0; i < i1; ++i) {
    const float p = k.decay != 0.0f ? pp[i] - k.decay * pp[i] : pp[i];
    const float g = gp[i] * k.grad_scale;
    const float m = k.beta1 * mp[i] + k.one_minus_beta1 * g;
    const float v = k.beta2 * vp[i] + k.one_minus_beta2 * (g * g);
    mp[i] = m;
    vp[i] = v;
    pp[i] = p - k.lr * (m / k.c1) / (std::sqrt(v / k.c2) + k.eps);
    gp[i] = 0.0f;
  }
}

}  // namespace

void adam_update(float* pp, float* gp, float* mp, float* vp, int64_t n, const AdamStep& s) {
  const AdamStepF32 k(s);
  constexpr int64_t kChunk = 1 << 16;
  parallel_for(0, (n + kChunk - 1) / kChunk, 1, [&](int64_t chunk) {
    adam_range(pp, gp, mp, vp, chunk * kChunk, std::min(n, (chunk + 1) * kChunk), k);
  });
}

// Pass 1: moments with g*g, flagging squares that pow might round differently. Pass 2: redo
// flagged second moments with pow. Pass 3: the parameter update with sqrt and the bias
// corrections as exact reciprocal multiplications, flagging roots near a midpoint and
// numerators outside the range where the reciprocal trick is proven. Pass 4: redo those with
// pow and division.
void adam_update_exact(double* pp, double* g, double* m, double* v, double* v_old, uint8_t* flag,
                       int64_t n, const AdamStep& s) {
  const double b1 = s.beta1, b2 = s.beta2, eps = s.eps, lr = s.lr, c1 = s.c1, c2 = s.c2;
  if (s.decay != 0.0) {
    for (int64_t i = 0; i < n; ++i) pp[i] = pp[i] - s.decay * pp[i];
  }
  if (s.grad_scale != 1.0) {
    for (int64_t i = 0; i < n; ++i) g[i] *= s.grad_scale;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double sq = g[i] * g[i];
    flag[i] = static_cast<uint8_t>(static_cast<int>(g[i] != 0.0) &
                                   static_cast<int>(!square_is_safe(g[i], sq)));
    v_old[i] = v[i];
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * sq;
  }
  for_each_flagged(flag, n,
                   [&](int64_t i) { v[i] = b2 * v_old[i] + (1 - b2) * py_pow(g[i], 2.0); });
  const double r1 = 1.0 / c1, r2 = 1.0 / c2;  // exact quotients from these, see py_math.h
  for (int64_t i = 0; i < n; ++i) {
    // Both quotients computed unconditionally, then selected (so the loop vectorizes).
    const double m_div = div_by_reciprocal(m[i], c1, r1), v_div = div_by_reciprocal(v[i], c2, r2);
    const double m_hat = m[i] == 0.0 ? m[i] : m_div;
    const double v_hat = v[i] == 0.0 ? v[i] : v_div;
    const double root = std::sqrt(v_hat);
    const int exact =
        (static_cast<int>(m[i] == 0.0) | static_cast<int>(divides_by_reciprocal_safely(m[i]))) &
        (static_cast<int>(v[i] == 0.0) | static_cast<int>(divides_by_reciprocal_safely(v[i]))) &
        (static_cast<int>(v_hat == 0.0) | static_cast<int>(sqrt_is_safe(v_hat, root)));
    flag[i] = static_cast<uint8_t>(exact ^ 1);
    v_old[i] = pp[i];  // reused: the parameter before the update
    pp[i] = pp[i] - lr * m_hat / (root + eps);
  }
  for_each_flagged(flag, n, [&](int64_t i) {
    pp[i] = v_old[i] - lr * (m[i] / c1) / (py_pow(v[i] / c2, 0.5) + eps);
  });
  std::fill(g, g + n, 0.0);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_ADAM_ENTRIES(X)                                                              \
  X(void adam_update(float* p, float* g, float* m, float* v, int64_t n, const AdamStep& s), \
    adam_update, (p, g, m, v, n, s))                                                        \
  X(void adam_update_exact(double* p, double* g, double* m, double* v, double* scratch,     \
                           uint8_t* flags, int64_t n, const AdamStep& s),                   \
    adam_update_exact, (p, g, m, v, scratch, flags, n, s))
TINYLM_PUBLIC_ENTRIES(TINYLM_ADAM_ENTRIES)

}  // namespace tinylm::kernels
#endif
