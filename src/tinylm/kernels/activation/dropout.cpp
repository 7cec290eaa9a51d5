#include "tinylm/kernels/activation/dropout.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

// Philox4x32-10 on 16 counters at once (lane i: counter {c0 + i, c1, c2, c3}); the rounds of
// core/philox.h, which the tests hold it to. Plain lane loops, vectorized by the compiler at
// each level (integer arithmetic: the same bits wherever it runs).
void philox16(uint32_t out[4][16], uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
              uint64_t seed) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t x0[16], x1[16], x2[16], x3[16];
  for (int i = 0; i < 16; ++i) {
    x0[i] = c0 + static_cast<uint32_t>(i);
    x1[i] = c1;
    x2[i] = c2;
    x3[i] = c3;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 16; ++i) {
      const uint64_t p0 = static_cast<uint64_t>(x0[i]) * kM0;
      const uint64_t p1 = static_cast<uint64_t>(x2[i]) * kM1;
      const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x1[i] ^ k0;
      const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x3[i] ^ k1;
      x1[i] = static_cast<uint32_t>(p1);
      x3[i] = static_cast<uint32_t>(p0);
      x0[i] = y0;
      x2[i] = y2;
    }
    k0 += kW0;
    k1 += kW1;
  }
  for (int i = 0; i < 16; ++i) {
    out[0][i] = x0[i];
    out[1][i] = x1[i];
    out[2][i] = x2[i];
    out[3][i] = x3[i];
  }
}

constexpr int64_t kGroup = 64;           // elements per Philox batch: 16 counters x 4 words
constexpr int64_t kChunk = 64 * kGroup;  // elements per parallel task

// Writes the masks of elements [e0, e1): global elements [first + e0, first + e1), drawn in
// groups of kGroup aligned in the whole tensor.
void mask_range(uint8_t* mask, int64_t e0, int64_t e1, uint32_t threshold, DropoutSite w) {
  const uint32_t s_lo = static_cast<uint32_t>(w.step), s_hi = static_cast<uint32_t>(w.step >> 32);
  const uint64_t lo = w.first + static_cast<uint64_t>(e0), hi = w.first + static_cast<uint64_t>(e1);
  for (uint64_t g = lo / kGroup * kGroup; g < hi; g += kGroup) {
    uint32_t out[4][16];
    philox16(out, static_cast<uint32_t>(g / 4), w.site, s_lo, s_hi, w.seed);
    uint8_t m[kGroup];
    for (int i = 0; i < 16; ++i) {
      for (int word = 0; word < 4; ++word) m[4 * i + word] = (out[word][i] >> 8) >= threshold;
    }
    const uint64_t from = std::max(g, lo), to = std::min(g + kGroup, hi);
    std::copy(m + (from - g), m + (to - g), mask + (from - w.first));
  }
}

template <class T>
void forward(T* y, uint8_t* mask, const T* x, int64_t n, uint32_t threshold, T scale,
             DropoutSite where) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk), [&](int64_t c) {
    const int64_t e0 = c * kChunk, e1 = std::min(n, e0 + kChunk);
    mask_range(mask, e0, e1, threshold, where);
    for (int64_t e = e0; e < e1; ++e) y[e] = mask[e] ? x[e] * scale : T(0);
  });
}

template <class T>
void backward(T* dx, const T* dy, const uint8_t* mask, int64_t n, T scale) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk), [&](int64_t c) {
    const int64_t e1 = std::min(n, (c + 1) * kChunk);
    for (int64_t e = c * kChunk; e < e1; ++e) dx[e] = mask[e] ? dy[e] * scale : T(0);
  });
}

}  // namespace

void dropout_mask(uint8_t* mask, int64_t n, uint32_t threshold, DropoutSite where) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk), [&](int64_t c) {
    mask_range(mask, c * kChunk, std::min(n, (c + 1) * kChunk), threshold, where);
  });
}
void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, uint32_t threshold,
                     float scale, DropoutSite where) {
  forward(y, mask, x, n, threshold, scale, where);
}
void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, uint32_t threshold,
                     double scale, DropoutSite where) {
  forward(y, mask, x, n, threshold, scale, where);
}
void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, float scale) {
  backward(dx, dy, mask, n, scale);
}
void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n, double scale) {
  backward(dx, dy, mask, n, scale);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// The public functions take a rate and check it; the levels take its threshold and scale.
#define TINYLM_DROPOUT_ENTRIES(X)                                                                  \
  X(void dropout_mask(uint8_t* mask, int64_t n, uint32_t threshold, DropoutSite where),            \
    dropout_mask, (mask, n, threshold, where))                                                     \
  X(void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, uint32_t threshold,   \
                         float scale, DropoutSite where),                                          \
    dropout_forward, (y, mask, x, n, threshold, scale, where))                                     \
  X(void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, uint32_t threshold, \
                         double scale, DropoutSite where),                                         \
    dropout_forward, (y, mask, x, n, threshold, scale, where))                                     \
  X(void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n,              \
                          float scale),                                                            \
    dropout_backward, (dx, dy, mask, n, scale))                                                    \
  X(void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n,            \
                          double scale),                                                           \
    dropout_backward, (dx, dy, mask, n, scale))
TINYLM_ACTIVE_ENTRIES(TINYLM_DROPOUT_ENTRIES)

namespace {
void check_args(int64_t n, float rate, const DropoutSite& where) {
  check(rate >= 0.0f && rate < 1.0f, "dropout: rate must be in [0, 1), got ", rate);
  constexpr uint64_t kMax = uint64_t{1} << 34;  // the counter's word holds g / 4
  check(n >= 0 && where.first <= kMax && static_cast<uint64_t>(n) <= kMax - where.first,
        "dropout: elements ", where.first, " + ", n, " are out of range");
}
// Keeps u >= rate, i.e. (w >> 8) >= ceil(rate * 2^24), exactly.
uint32_t keep_threshold(float rate) {
  return static_cast<uint32_t>(std::ceil(static_cast<double>(rate) * 16777216.0));
}
template <class T>
T keep_scale(float rate) {
  return T(1) / (T(1) - static_cast<T>(rate));
}
}  // namespace

void dropout_mask(uint8_t* mask, int64_t n, float rate, DropoutSite where) {
  check_args(n, rate, where);
  active::dropout_mask(mask, n, keep_threshold(rate), where);
}
void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, float rate,
                     DropoutSite where) {
  check_args(n, rate, where);
  active::dropout_forward(y, mask, x, n, keep_threshold(rate), keep_scale<float>(rate), where);
}
void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, float rate,
                     DropoutSite where) {
  check_args(n, rate, where);
  active::dropout_forward(y, mask, x, n, keep_threshold(rate), keep_scale<double>(rate), where);
}
void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, float rate) {
  active::dropout_backward(dx, dy, mask, n, keep_scale<float>(rate));
}
void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n, float rate) {
  active::dropout_backward(dx, dy, mask, n, keep_scale<double>(rate));
}

}  // namespace tinylm::kernels
#endif
