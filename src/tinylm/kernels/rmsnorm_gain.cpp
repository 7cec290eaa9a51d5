// kernels/rmsnorm_gain.h, vectorized along the row; the lane sums are reduced in a fixed
// order, so a row's result does not depend on the other rows.
#include "tinylm/kernels/rmsnorm_gain.h"

#include <cmath>

#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {

using vec::kLanes;
using vec::Vec;

template <class T>
void rmsnorm_gain_forward(T* y, T* rstd, const T* x, const T* g, int64_t rows, int64_t n, T eps) {
  constexpr int64_t W = kLanes<T>;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    Vec<T> acc = {};
    int64_t i = 0;
    for (; i + W <= n; i += W) {
      const Vec<T> v = vec::load(xr + i);
      acc += v * v;
    }
    if (i < n) {
      const Vec<T> v = vec::load_n(xr + i, n - i);
      acc += v * v;
    }
    const T s = T(1) / std::sqrt(vec::hsum(acc) / static_cast<T>(n) + eps);
    rstd[r] = s;
    i = 0;
    for (; i + W <= n; i += W) vec::store(yr + i, vec::load(xr + i) * s * vec::load(g + i));
    if (i < n) {
      vec::store_n(yr + i, vec::load_n(xr + i, n - i) * s * vec::load_n(g + i, n - i), n - i);
    }
  }
}

template <class T>
void rmsnorm_gain_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* rstd, int64_t rows,
                           int64_t n) {
  constexpr int64_t W = kLanes<T>;
  const T inv_n = T(1) / static_cast<T>(n);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* dyr = dy + r * n;
    T* dxr = dx + r * n;
    const T s = rstd[r];
    Vec<T> acc = {};
    for (int64_t i = 0; i < n; i += W) {
      const int64_t w = n - i < W ? n - i : W;
      const Vec<T> xh = vec::load_n(xr + i, w) * s;
      const Vec<T> dyv = vec::load_n(dyr + i, w);
      acc += dyv * vec::load_n(g + i, w) * xh;
      vec::store_n(dg + i, vec::load_n(dg + i, w) + dyv * xh, w);
    }
    const T c = vec::hsum(acc) * inv_n;
    for (int64_t i = 0; i < n; i += W) {
      const int64_t w = n - i < W ? n - i : W;
      const Vec<T> xh = vec::load_n(xr + i, w) * s;
      const Vec<T> gy = vec::load_n(dyr + i, w) * vec::load_n(g + i, w);
      vec::store_n(dxr + i, vec::load_n(dxr + i, w) + s * (gy - xh * c), w);
    }
  }
}

template void rmsnorm_gain_forward<float>(float*, float*, const float*, const float*, int64_t, int64_t, float);
template void rmsnorm_gain_forward<double>(double*, double*, const double*, const double*, int64_t, int64_t,
                                           double);
template void rmsnorm_gain_backward<float>(float*, float*, const float*, const float*, const float*,
                                           const float*, int64_t, int64_t);
template void rmsnorm_gain_backward<double>(double*, double*, const double*, const double*, const double*,
                                            const double*, int64_t, int64_t);

}  // namespace tinylm::kernels
