#pragma once
// ReLU (microgpt). Contract: exact, elementwise.
#include <cstdint>

namespace tinylm::kernels {

// y = max(x, 0); NaN maps to 0 as Python's max(0, x) does.
template <class T>
void relu_forward(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

// dx += (x > 0) * dy
template <class T>
void relu_backward(T* dx, const T* dy, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] += (x[i] > T(0) ? T(1) : T(0)) * dy[i];
}

}  // namespace tinylm::kernels
