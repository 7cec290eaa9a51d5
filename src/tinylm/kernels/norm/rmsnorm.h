#pragma once
// microgpt's RMSNorm, without a gain: y = x * (mean(x^2) + eps)^-0.5, per row. The mean is the
// sum times pow(n, -1) and the scale a pow(., -0.5), the operations microgpt.py performs.
//
// Contract: exact. Plain loops in CPython's order: double results match CPython's bit for bit.
// EvermindLM's RMSNorm, with a gain, is norm/rmsnorm_gain.h.
#include <cmath>
#include <cstdint>

#include "tinylm/core/py_math.h"

namespace tinylm::kernels {

// y: (rows, n)   x: (rows, n)   scale: (rows) — saved for the backward
template <class T>
void rmsnorm_forward(T* y, T* scale, const T* x, int64_t rows, int64_t n, T eps) {
  const T inv_n = py_pow(T(n), T(-1));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T ss = T(0);
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const T s = py_pow(ss * inv_n + eps, T(-0.5));
    scale[r] = s;
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = xr[i] * s;
  }
}

// Accumulates dx (+=) from dy. With d = mean(x^2) + eps and s = d^-0.5:
// ds = sum_i x_i dy_i, dd = -0.5 d^-1.5 ds, and each x_i appears twice in x_i * x_i.
template <class T>
void rmsnorm_backward(T* dx, const T* dy, const T* x, const T* scale, int64_t rows, int64_t n,
                      T eps) {
  const T inv_n = py_pow(T(n), T(-1));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* dyr = dy + r * n;
    T* dxr = dx + r * n;
    const T s = scale[r];
    T ds = T(0);
    for (int64_t i = n - 1; i >= 0; --i) ds += xr[i] * dyr[i];
    T ss = T(0);
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const T d = ss * inv_n + eps;
    const T dss = inv_n * ((T(-0.5) * py_pow(d, T(-1.5))) * ds);
    for (int64_t i = 0; i < n; ++i) {
      dxr[i] += s * dyr[i];
      dxr[i] += xr[i] * dss;
      dxr[i] += xr[i] * dss;
    }
  }
}

}  // namespace tinylm::kernels
