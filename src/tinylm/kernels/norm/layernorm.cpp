#include "tinylm/kernels/norm/layernorm.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/norm/layernorm_reference.h"

TINYLM_LEVEL_BEGIN

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int64_t C, float eps) {
  parallel_for(0, rows, grain_for(4 * C), [&](int64_t r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    f32x16 acc{};
    for (int64_t i = 0; i < C; i += kLanes) acc += load_n(xr + i, std::min(kLanes, C - i));
    const float m = hsum(acc) / static_cast<float>(C);
    // Two passes (the mean, then the centred squares) as PyTorch does: no cancellation.
    acc = f32x16{};
    for (int64_t i = 0; i < C; i += kLanes) {
      const int64_t n = std::min(kLanes, C - i);
      const f32x16 d = load_n(xr + i, n) - splat_n(m, n);  // zero past the row's end
      acc = fma(d, d, acc);
    }
    const float s = 1.0f / std::sqrt(hsum(acc) / static_cast<float>(C) + eps);
    for (int64_t i = 0; i < C; i += kLanes) {
      const int64_t n = std::min(kLanes, C - i);
      store_n(yr + i, fma((load_n(xr + i, n) - m) * s, load_n(w + i, n), load_n(b + i, n)), n);
    }
    if (mean) mean[r] = m;
    if (rstd) rstd[r] = s;
  });
}

void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows,
                        int64_t C) {
  // dx per row in parallel: with n = (x - mean) rstd and g = dy w,
  //   dx += rstd (g - mean(g) - n mean(g n)).
  parallel_for(0, rows, grain_for(6 * C), [&](int64_t r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    float* dxr = dx + r * C;
    const float m = mean[r], s = rstd[r];
    const float* ahead = x + std::min(r + 4, rows - 1) * C;  // (x was written in the forward)
    f32x16 a{}, an{};
    for (int64_t i = 0; i < C; i += kLanes) {
      __builtin_prefetch(ahead + i, 0, 3);
      const int64_t k = std::min(kLanes, C - i);
      const f32x16 g = load_n(dyr + i, k) * load_n(w + i, k);
      a += g;
      an = fma(g, (load_n(xr + i, k) - m) * s, an);
    }
    const float mg = hsum(a) / static_cast<float>(C), mgn = hsum(an) / static_cast<float>(C);
    for (int64_t i = 0; i < C; i += kLanes) {
      const int64_t k = std::min(kLanes, C - i);
      const f32x16 n = (load_n(xr + i, k) - m) * s;
      const f32x16 g = load_n(dyr + i, k) * load_n(w + i, k);
      store_n(dxr + i, fma(splat(s), g - mg - n * mgn, load_n(dxr + i, k)), k);
    }
  });
  // dw, db: sums over rows. Threads split the columns, so each column is summed by one thread
  // in row order (deterministic, no partial buffers), in registers across the rows. (The work
  // counts the two loads an element: at nanoGPT's width of 128 the two blocks then fork.)
  constexpr int kVectors = 4;
  constexpr int64_t kBlock = kVectors * kLanes;
  parallel_for(0, (C + kBlock - 1) / kBlock, grain_for(6 * rows * kBlock), [&](int64_t blk) {
    const int64_t c0 = blk * kBlock;
    const int vectors =
        static_cast<int>(std::min<int64_t>(kVectors, (C - c0 + kLanes - 1) / kLanes));
    const int64_t last = std::min(kLanes, C - c0 - (vectors - 1) * kLanes);  // the last one's lanes
    const auto width = [&](int v) { return v == vectors - 1 ? last : kLanes; };
    f32x16 sw[kVectors], sb[kVectors];
    for (int v = 0; v < vectors; ++v) {
      sw[v] = load_n(dw + c0 + v * kLanes, width(v));
      sb[v] = load_n(db + c0 + v * kLanes, width(v));
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * C + c0;
      const float* dyr = dy + r * C + c0;
      const float m = mean[r], s = rstd[r];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        if (v >= vectors) break;
        const f32x16 g = load_n(dyr + v * kLanes, width(v));
        sw[v] = fma(g, (load_n(xr + v * kLanes, width(v)) - m) * s, sw[v]);
        sb[v] = sb[v] + g;
      }
    }
    for (int v = 0; v < vectors; ++v) {
      store_n(dw + c0 + v * kLanes, sw[v], width(v));
      store_n(db + c0 + v * kLanes, sb[v], width(v));
    }
  });
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_LAYERNORM_ENTRIES(X)                                                             \
  X(void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w,  \
                           const float* b, int64_t rows, int64_t C, float eps),                 \
    layernorm_forward, (y, mean, rstd, x, w, b, rows, C, eps))                                  \
  X(void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x,   \
                            const float* w, const float* mean, const float* rstd, int64_t rows, \
                            int64_t C),                                                         \
    layernorm_backward, (dx, dw, db, dy, x, w, mean, rstd, rows, C))
TINYLM_PUBLIC_ENTRIES(TINYLM_LAYERNORM_ENTRIES)

void layernorm_forward(double* y, double* mean, double* rstd, const double* x, const double* w,
                       const double* b, int64_t rows, int64_t C, double eps) {
  reference::layernorm_forward(y, mean, rstd, x, w, b, rows, C, eps);
}
void layernorm_backward(double* dx, double* dw, double* db, const double* dy, const double* x,
                        const double* w, const double* mean, const double* rstd, int64_t rows,
                        int64_t C) {
  reference::layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, rows, C);
}

}  // namespace tinylm::kernels
#endif
