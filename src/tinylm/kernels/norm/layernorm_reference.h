#pragma once
// kernels/norm/layernorm.h as plain loops, for any number type.
#include <cmath>
#include <cstdint>

namespace tinylm::kernels::reference {

template <class T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b, int64_t rows,
                       int64_t C, T eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T m = 0;
    for (int64_t i = 0; i < C; ++i) m += xr[i];
    m /= static_cast<T>(C);
    T var = 0;
    for (int64_t i = 0; i < C; ++i) var += (xr[i] - m) * (xr[i] - m);
    var /= static_cast<T>(C);
    const T s = T(1) / std::sqrt(var + eps);
    for (int64_t i = 0; i < C; ++i) y[r * C + i] = (xr[i] - m) * s * w[i] + b[i];
    if (mean) mean[r] = m;
    if (rstd) rstd[r] = s;
  }
}

// With n = (x - mean) rstd and g = dy w:  dx += rstd (g - mean(g) - n mean(g n)),
// dw += sum over rows of dy n, db += sum over rows of dy.
template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, const T* mean,
                        const T* rstd, int64_t rows, int64_t C) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    const T* dyr = dy + r * C;
    const T m = mean[r], s = rstd[r];
    T sum_g = 0, sum_gn = 0;
    for (int64_t i = 0; i < C; ++i) {
      sum_g += dyr[i] * w[i];
      sum_gn += dyr[i] * w[i] * ((xr[i] - m) * s);
    }
    const T mg = sum_g / static_cast<T>(C), mgn = sum_gn / static_cast<T>(C);
    for (int64_t i = 0; i < C; ++i) {
      const T n = (xr[i] - m) * s;
      dx[r * C + i] += s * (dyr[i] * w[i] - mg - n * mgn);
      dw[i] += dyr[i] * n;
      db[i] += dyr[i];
    }
  }
}

}  // namespace tinylm::kernels::reference
