#include "tinylm/kernels/gelu_train.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
constexpr int64_t kChunk = 4096;  // elements per parallel task (multiple of 16)

// Runs body(i0, i1) over [0, n) in chunks split across threads.
template <class Fn>
void chunked(int64_t n, Fn&& body) {
  parallel_for(0, (n + kChunk - 1) / kChunk, 4, [&](int64_t c) {
    body(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
}

template <class V>
V gelu_of(V x, V t) {
  return 0.5f * x * (1.0f + t);
}
}  // namespace

template <class T>
void gelu_tanh_train_forward(T* y, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    const float k = static_cast<float>(kSqrt2OverPi), a = static_cast<float>(kCubic);
    chunked(n, [&](int64_t i0, int64_t i1) {
      int64_t i = i0;
      for (; i + 16 <= i1; i += 16) {
        const simd::f32x16 v = simd::load(x + i);
        const simd::f32x16 t = simd::tanh(k * (v + a * v * v * v));
        simd::store(y + i, gelu_of(v, t));
      }
      for (; i < i1; ++i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + simd::tanh_scalar(k * (v + a * v * v * v)));
      }
    });
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      y[i] = T(0.5) * v * (T(1) + std::tanh(T(kSqrt2OverPi) * (v + T(kCubic) * v * v * v)));
    }
  }
}

// d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2), t = tanh(u).
template <class T>
void gelu_tanh_train_backward(T* dx, const T* dy, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    const float k = static_cast<float>(kSqrt2OverPi), a = static_cast<float>(kCubic),
                a3 = static_cast<float>(3 * kCubic);
    chunked(n, [&](int64_t i0, int64_t i1) {
      int64_t i = i0;
      for (; i + 16 <= i1; i += 16) {
        const simd::f32x16 v = simd::load(x + i);
        const simd::f32x16 v2 = v * v;
        const simd::f32x16 t = simd::tanh(k * (v + a * v2 * v));
        const simd::f32x16 d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * k * (1.0f + a3 * v2);
        simd::store(dx + i, d * simd::load(dy + i));
      }
      for (; i < i1; ++i) {
        const float v = x[i], v2 = v * v;
        const float t = simd::tanh_scalar(k * (v + a * v2 * v));
        dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * k * (1.0f + a3 * v2));
      }
    });
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i], v2 = v * v;
      const T t = std::tanh(T(kSqrt2OverPi) * (v + T(kCubic) * v2 * v));
      dx[i] = dy[i] * (T(0.5) * (1 + t) + T(0.5) * v * (1 - t * t) * T(kSqrt2OverPi) * (1 + T(3 * kCubic) * v2));
    }
  }
}

template void gelu_tanh_train_forward<float>(float*, const float*, int64_t);
template void gelu_tanh_train_forward<double>(double*, const double*, int64_t);
template void gelu_tanh_train_backward<float>(float*, const float*, const float*, int64_t);
template void gelu_tanh_train_backward<double>(double*, const double*, const double*, int64_t);

}  // namespace tinylm::kernels
