#pragma once
// kernels/norm/rmsnorm_gain.h as plain loops, for any number type.
#include <cmath>
#include <cstdint>

namespace tinylm::kernels::reference {

template <class T>
void rmsnorm_gain_forward(T* y, T* rstd, const T* x, const T* g, int64_t rows, int64_t n, T eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const T s = T(1) / std::sqrt(ss / static_cast<T>(n) + eps);
    rstd[r] = s;
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = xr[i] * s * g[i];
  }
}

template <class T>
void rmsnorm_gain_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* rstd,
                           int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* dyr = dy + r * n;
    const T s = rstd[r];
    T acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      acc += dyr[i] * g[i] * (xr[i] * s);
      dg[i] += dyr[i] * (xr[i] * s);
    }
    const T c = acc / static_cast<T>(n);
    for (int64_t i = 0; i < n; ++i) dx[r * n + i] += s * (dyr[i] * g[i] - xr[i] * s * c);
  }
}

}  // namespace tinylm::kernels::reference
