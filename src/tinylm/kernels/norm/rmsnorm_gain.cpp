#include "tinylm/kernels/norm/rmsnorm_gain.h"

#include <algorithm>
#include <cmath>

#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/norm/rmsnorm_gain_reference.h"

TINYLM_LEVEL_BEGIN

void rmsnorm_gain_forward(float* y, float* rstd, const float* x, const float* g, int64_t rows,
                          int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    f32x16 acc{};
    for (int64_t i = 0; i < n; i += kLanes) {
      const f32x16 v = load_n(xr + i, std::min(kLanes, n - i));
      acc = fma(v, v, acc);
    }
    const float s = 1.0f / std::sqrt(hsum(acc) / static_cast<float>(n) + eps);
    rstd[r] = s;
    for (int64_t i = 0; i < n; i += kLanes) {
      const int64_t w = std::min(kLanes, n - i);
      store_n(yr + i, load_n(xr + i, w) * s * load_n(g + i, w), w);
    }
  }
}

void rmsnorm_gain_backward(float* dx, float* dg, const float* dy, const float* x, const float* g,
                           const float* rstd, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* dyr = dy + r * n;
    float* dxr = dx + r * n;
    const float s = rstd[r];
    f32x16 acc{};
    for (int64_t i = 0; i < n; i += kLanes) {
      const int64_t w = std::min(kLanes, n - i);
      const f32x16 xh = load_n(xr + i, w) * s;
      const f32x16 dyv = load_n(dyr + i, w);
      acc = fma(dyv * load_n(g + i, w), xh, acc);
      store_n(dg + i, fma(dyv, xh, load_n(dg + i, w)), w);
    }
    const float c = hsum(acc) / static_cast<float>(n);
    for (int64_t i = 0; i < n; i += kLanes) {
      const int64_t w = std::min(kLanes, n - i);
      const f32x16 xh = load_n(xr + i, w) * s;
      const f32x16 gy = load_n(dyr + i, w) * load_n(g + i, w);
      store_n(dxr + i, fma(splat(s), gy - xh * c, load_n(dxr + i, w)), w);
    }
  }
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_RMSNORM_GAIN_ENTRIES(X)                                                             \
  X(void rmsnorm_gain_forward(float* y, float* rstd, const float* x, const float* g, int64_t rows, \
                              int64_t n, float eps),                                               \
    rmsnorm_gain_forward, (y, rstd, x, g, rows, n, eps))                                           \
  X(void rmsnorm_gain_backward(float* dx, float* dg, const float* dy, const float* x,              \
                               const float* g, const float* rstd, int64_t rows, int64_t n),        \
    rmsnorm_gain_backward, (dx, dg, dy, x, g, rstd, rows, n))
TINYLM_PUBLIC_ENTRIES(TINYLM_RMSNORM_GAIN_ENTRIES)

void rmsnorm_gain_forward(double* y, double* rstd, const double* x, const double* g, int64_t rows,
                          int64_t n, double eps) {
  reference::rmsnorm_gain_forward(y, rstd, x, g, rows, n, eps);
}
void rmsnorm_gain_backward(double* dx, double* dg, const double* dy, const double* x,
                           const double* g, const double* rstd, int64_t rows, int64_t n) {
  reference::rmsnorm_gain_backward(dx, dg, dy, x, g, rstd, rows, n);
}

}  // namespace tinylm::kernels
#endif
