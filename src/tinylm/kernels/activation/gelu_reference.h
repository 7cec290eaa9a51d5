#pragma once
// kernels/activation/gelu.h's formulas as plain loops, for any number type.
#include <cmath>
#include <cstdint>

namespace tinylm::kernels::reference {

inline constexpr double kGeluSqrt2OverPi = 0.7978845608028654;
inline constexpr double kGeluCubic = 0.044715;

template <class T>
void gelu_forward(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    y[i] = T(0.5) * v * (T(1) + std::tanh(T(kGeluSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v)));
  }
}

template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T t = std::tanh(T(kGeluSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v));
    const T d = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * T(kGeluSqrt2OverPi) *
                                          (T(1) + T(3 * kGeluCubic) * v * v);
    dx[i] = dy[i] * d;
  }
}

}  // namespace tinylm::kernels::reference
