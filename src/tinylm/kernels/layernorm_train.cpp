#include "tinylm/kernels/layernorm_train.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

namespace {
template <class T>
T row_sum(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    simd::f32x16 acc{};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) acc += simd::load(x + i);
    float s = simd::hsum(acc);
    for (; i < n; ++i) s += x[i];
    return s;
  } else {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i];
    return s;
  }
}

template <class T>
T centered_square_sum(const T* x, T m, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    simd::f32x16 acc{};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const simd::f32x16 d = simd::load(x + i) - m;
      acc += d * d;
    }
    float s = simd::hsum(acc);
    for (; i < n; ++i) s += (x[i] - m) * (x[i] - m);
    return s;
  } else {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += (x[i] - m) * (x[i] - m);
    return s;
  }
}
}  // namespace

template <class T>
void layernorm_forward_train(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b,
                             int64_t rows, int64_t C, T eps) {
  parallel_for(0, rows, simd::grain_for(4 * C), [&](int64_t r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    const T m = row_sum(xr, C) / static_cast<T>(C);
    // Two passes (mean, then the centred squares) as PyTorch does: no cancellation.
    const T var = centered_square_sum(xr, m, C) / static_cast<T>(C);
    const T s = static_cast<T>(1) / std::sqrt(var + eps);
    for (int64_t i = 0; i < C; ++i) yr[i] = (xr[i] - m) * s * w[i] + b[i];
    mean[r] = m;
    rstd[r] = s;
  });
}

template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, const T* mean,
                        const T* rstd, int64_t rows, int64_t C) {
  // dx per row in parallel: with n = (x - mean) rstd and g = dy w,
  //   dx = rstd (g - mean(g) - n mean(g n)).
  parallel_for(0, rows, simd::grain_for(6 * C), [&](int64_t r) {
    const T* xr = x + r * C;
    const T* dyr = dy + r * C;
    T* dxr = dx + r * C;
    const T m = mean[r], s = rstd[r];
    T sum_g = 0, sum_gn = 0;
    if constexpr (std::is_same_v<T, float>) {
      simd::f32x16 a{}, an{};
      int64_t i = 0;
      for (; i + 16 <= C; i += 16) {
        const simd::f32x16 g = simd::load(dyr + i) * simd::load(w + i);
        a += g;
        an += g * ((simd::load(xr + i) - m) * s);
      }
      sum_g = simd::hsum(a);
      sum_gn = simd::hsum(an);
      for (; i < C; ++i) {
        const float g = dyr[i] * w[i];
        sum_g += g;
        sum_gn += g * ((xr[i] - m) * s);
      }
    } else {
      for (int64_t i = 0; i < C; ++i) {
        const T g = dyr[i] * w[i];
        sum_g += g;
        sum_gn += g * ((xr[i] - m) * s);
      }
    }
    const T mg = sum_g / static_cast<T>(C), mgn = sum_gn / static_cast<T>(C);
    for (int64_t i = 0; i < C; ++i) {
      const T n = (xr[i] - m) * s;
      dxr[i] += s * (dyr[i] * w[i] - mg - n * mgn);
    }
  });
  // dw, db: sums over rows. Threads split the columns, so each column is summed by one
  // thread in row order (deterministic, no partial buffers).
  constexpr int64_t kBlock = 64;
  parallel_for(0, (C + kBlock - 1) / kBlock, simd::grain_for(2 * rows * kBlock), [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = x + r * C;
      const T* dyr = dy + r * C;
      const T m = mean[r], s = rstd[r];
      for (int64_t i = c0; i < c1; ++i) {
        dw[i] += dyr[i] * ((xr[i] - m) * s);
        db[i] += dyr[i];
      }
    }
  });
}

template void layernorm_forward_train<float>(float*, float*, float*, const float*, const float*,
                                             const float*, int64_t, int64_t, float);
template void layernorm_forward_train<double>(double*, double*, double*, const double*,
                                              const double*, const double*, int64_t, int64_t, double);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, int64_t, int64_t);
template void layernorm_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, const double*, const double*, int64_t,
                                         int64_t);

}  // namespace tinylm::kernels
