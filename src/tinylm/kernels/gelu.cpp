#include "tinylm/kernels/gelu.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"
#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

using vec::Vec;
constexpr int64_t kW = vec::kLanes<float>;
constexpr int64_t kChunk = 4096;  // elements per parallel task (a multiple of kW)

// Runs body(i0, i1) over [0, n) in chunks split across threads (inline when the range is
// small or the caller is already inside a parallel region, as EvermindLM's training is).
// Elementwise, so the split never changes a result.
template <class Fn>
void chunked(int64_t n, Fn&& body) {
  parallel_for(0, (n + kChunk - 1) / kChunk, 4, [&](int64_t c) { body(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

// The float path writes tanh through e = exp(2u): 1 + t = 2e/(1+e) and 1 − t = 2/(1+e), so
// gelu = x·e/(1+e) and gelu' = e/(1+e) + 2x·e/(1+e)²·√(2/π)(1 + 3·0.044715 x²), free of
// the cancellation in 1 + t for very negative x.

inline Vec<float> tanh_arg(Vec<float> x) {
  return static_cast<float>(kSqrt2OverPi) * (x + static_cast<float>(kCubic) * x * x * x);
}

}  // namespace

template <class T>
void gelu_forward(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    chunked(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i += kW) {
        const int64_t w = std::min(kW, i1 - i);
        const Vec<float> v = vec::load_n(x + i, w);
        const Vec<float> e = simd::exp(2.0f * tanh_arg(v));
        vec::store_n(y + i, v * (e / (1.0f + e)), w);
      }
    });
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      y[i] = T(0.5) * v * (T(1) + std::tanh(T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v)));
    }
  }
}

template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    const float c = static_cast<float>(kSqrt2OverPi), c3 = static_cast<float>(3 * kCubic);
    chunked(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i += kW) {
        const int64_t w = std::min(kW, i1 - i);
        const Vec<float> v = vec::load_n(x + i, w);
        const Vec<float> e = simd::exp(2.0f * tanh_arg(v));
        const Vec<float> r = 1.0f / (1.0f + e);
        const Vec<float> s = e * r;  // never inf·0: e is at most ~2e38
        const Vec<float> d = s + (2.0f * v) * (s * r) * c * (1.0f + c3 * v * v);
        vec::store_n(dx + i, vec::load_n(dy + i, w) * d, w);
      }
    });
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      const T t = std::tanh(T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v));
      const T d = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * T(kSqrt2OverPi) * (T(1) + T(3 * kCubic) * v * v);
      dx[i] = dy[i] * d;
    }
  }
}

template void gelu_forward<float>(float*, const float*, int64_t);
template void gelu_forward<double>(double*, const double*, int64_t);
template void gelu_backward<float>(float*, const float*, const float*, int64_t);
template void gelu_backward<double>(double*, const double*, const double*, int64_t);

}  // namespace tinylm::kernels
