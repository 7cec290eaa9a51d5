#pragma once
// Adam / AdamW over flat spans. The update is written term for term as microgpt.py writes
// it, so a double run reproduces Python's floats exactly:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g**2
//   p -= lr * (m / (1 - b1**t)) / ((v / (1 - b2**t))**0.5 + eps)
// `**` is the C library's pow (see core/py_math.h); the double path computes g*g and sqrt in
// vectorizable passes and redoes with pow only the few elements near a rounding midpoint.
// Weight decay, when non-zero, is decoupled (AdamW): p -= lr * wd * p before the update.
// The float path computes each element in double, in chunks split across threads (each
// element's arithmetic is its own, so the bytes do not depend on the thread count).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/py_math.h"

namespace tinylm::optim {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

template <class T>
class Adam {
 public:
  // The exact double path needs per-element scratch; the float path none.
  Adam(size_t n, AdamConfig config)
      : config_(config),
        m_(n, T(0)),
        v_(n, T(0)),
        scratch_(std::is_same_v<T, double> ? n : 0),
        needs_pow_(std::is_same_v<T, double> ? n : 0) {}

  // One update at 1-based step t with learning rate lr (schedules live with the caller).
  // Zeroes grads afterwards, ready for the next accumulation.
  void step(std::span<T> params, std::span<T> grads, double lr, int64_t t) {
    check(params.size() == m_.size() && grads.size() == m_.size(),
          "[Adam::step] parameter/gradient size does not match the optimizer state");
    check(t >= 1, "[Adam::step] step count must start at 1");
    const double decay = lr * config_.weight_decay;
    const double c1 = 1 - py_pow(config_.beta1, static_cast<double>(t));
    const double c2 = 1 - py_pow(config_.beta2, static_cast<double>(t));
    if constexpr (std::is_same_v<T, double>) {
      if (decay != 0.0) {
        for (T& p : params) p = p - decay * p;
      }
      step_exact(params, grads, lr, c1, c2);
    } else {
      step_plain(params, grads, lr, c1, c2, decay);
    }
  }

  std::span<const T> first_moment() const { return m_; }
  std::span<const T> second_moment() const { return v_; }

 private:
  void step_plain(std::span<T> params, std::span<T> grads, double lr, double c1, double c2,
                  double decay) {
    const double b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
    constexpr int64_t kChunk = 1 << 16;
    const int64_t n = static_cast<int64_t>(params.size());
    T* pp = params.data();
    T* gp = grads.data();
    T* mp = m_.data();
    T* vp = v_.data();
    parallel_for(0, (n + kChunk - 1) / kChunk, 1, [&](int64_t chunk) {
      const int64_t i1 = std::min(n, (chunk + 1) * kChunk);
      for (int64_t i = chunk * kChunk; i < i1; ++i) {
        const T p = decay != 0.0 ? static_cast<T>(pp[i] - decay * pp[i]) : pp[i];
        const double g = gp[i];
        const double m = b1 * mp[i] + (1 - b1) * g;
        const double v = b2 * vp[i] + (1 - b2) * (g * g);
        mp[i] = static_cast<T>(m);
        vp[i] = static_cast<T>(v);
        pp[i] = static_cast<T>(p - lr * (m / c1) / (std::sqrt(v / c2) + eps));
        gp[i] = T(0);
      }
    });
  }

  // Exact CPython arithmetic. Pass 1 (vectorized): moments with g*g, flagging squares that
  // pow might round differently. Pass 2: redo flagged second moments with pow. Pass 3
  // (vectorized): the parameter update with sqrt and the bias corrections as exact
  // reciprocal multiplications, flagging roots near a midpoint and numerators outside the
  // range where the reciprocal trick is proven. Pass 4: redo those with pow and division.
  void step_exact(std::span<double> p, std::span<double> grads, double lr, double c1, double c2) {
    const double b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
    const size_t n = p.size();
    double* m = m_.data();
    double* v = v_.data();
    double* v_old = scratch_.data();
    uint8_t* flag = needs_pow_.data();
    const double* g = grads.data();
    for (size_t i = 0; i < n; ++i) {
      const double sq = g[i] * g[i];
      flag[i] = static_cast<uint8_t>(static_cast<int>(g[i] != 0.0) & static_cast<int>(!square_is_safe(g[i], sq)));
      v_old[i] = v[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * sq;
    }
    for_each_flagged(n, [&](size_t i) { v[i] = b2 * v_old[i] + (1 - b2) * py_pow(g[i], 2.0); });
    double* pp = p.data();
    const double r1 = 1.0 / c1, r2 = 1.0 / c2;  // exact quotients from these, see py_math.h
    for (size_t i = 0; i < n; ++i) {
      const double m_hat = m[i] == 0.0 ? m[i] : div_by_reciprocal(m[i], c1, r1);
      const double v_hat = v[i] == 0.0 ? v[i] : div_by_reciprocal(v[i], c2, r2);
      const double s = std::sqrt(v_hat);
      const int exact = (static_cast<int>(m[i] == 0.0) | static_cast<int>(divides_by_reciprocal_safely(m[i]))) &
                        (static_cast<int>(v[i] == 0.0) | static_cast<int>(divides_by_reciprocal_safely(v[i]))) &
                        (static_cast<int>(v_hat == 0.0) | static_cast<int>(sqrt_is_safe(v_hat, s)));
      flag[i] = static_cast<uint8_t>(exact ^ 1);
      v_old[i] = pp[i];  // reused: the parameter before the update
      pp[i] = pp[i] - lr * m_hat / (s + eps);
    }
    for_each_flagged(n, [&](size_t i) {
      pp[i] = v_old[i] - lr * (m[i] / c1) / (py_pow(v[i] / c2, 0.5) + eps);
    });
    std::fill(grads.begin(), grads.end(), 0.0);
  }

  // Calls fn(i) for each i with needs_pow_[i] set, skipping eight clear flags at a time.
  template <class Fn>
  void for_each_flagged(size_t n, Fn&& fn) {
    const uint8_t* flag = needs_pow_.data();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t word;
      std::memcpy(&word, flag + i, 8);
      if (word == 0) continue;
      for (size_t k = 0; k < 8; ++k) {
        if (flag[i + k]) fn(i + k);
      }
    }
    for (; i < n; ++i) {
      if (flag[i]) fn(i);
    }
  }

  // Branch-free forms of the tests in py_square / py_sqrt, so the loops vectorize.
  static bool square_is_safe(double x, double sq) {
    const double lo = std::fma(x, x, -sq);
    return static_cast<int>(detail::exponent_within(x, detail::kSquareExponentLimit)) &
           static_cast<int>(std::fabs(lo) < detail::kSafeUlps * detail::ulp_of(sq));
  }
  static bool sqrt_is_safe(double x, double s) {
    const double r = std::fma(-s, s, x);
    return static_cast<int>(detail::exponent_within(x, detail::kSqrtExponentLimit)) &
           static_cast<int>(std::fabs(r) < 2.0 * detail::kSafeUlps * detail::ulp_of(s) * s);
  }

  AdamConfig config_;
  std::vector<T> m_, v_;
  std::vector<double> scratch_;
  std::vector<uint8_t> needs_pow_;
};

}  // namespace tinylm::optim
