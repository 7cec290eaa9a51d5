#include "tinylm/kernels/gpt_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tinylm/core/parallel.h"

namespace tinylm::kernels {

namespace {
using f32x16 = float __attribute__((vector_size(64)));

inline f32x16 load16(const float* p) {
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline f32x16 load16(const Bf16* p) {
  // bf16 -> f32 is a 16-bit shift.
  using u16x16 = uint16_t __attribute__((vector_size(32)));
  using u32x16 = uint32_t __attribute__((vector_size(64)));
  u16x16 h;
  std::memcpy(&h, p, sizeof h);
  const u32x16 wide = __builtin_convertvector(h, u32x16) << 16;
  f32x16 v;
  std::memcpy(&v, &wide, sizeof v);
  return v;
}
inline f32x16 load16(const F16* p) {
#if defined(__F16C__)
  const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  f32x16 v;
  std::memcpy(&v, &lo, 32);
  std::memcpy(reinterpret_cast<char*>(&v) + 32, &hi, 32);
  return v;
#else
  f32x16 v;
  for (int i = 0; i < 16; ++i) v[i] = f16_to_float(p[i].bits);
  return v;
#endif
}
inline void store16(float* p, f32x16 v) { std::memcpy(p, &v, sizeof v); }
inline float hsum(f32x16 v) {
  float s = 0;
  for (int i = 0; i < 16; ++i) s += v[i];
  return s;
}
}  // namespace

void layernorm_forward(float* y, const float* x, const float* w, const float* b, int64_t rows,
                       int64_t C, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    double mean = 0;
    for (int64_t i = 0; i < C; ++i) mean += xr[i];
    mean /= static_cast<double>(C);
    double var = 0;
    for (int64_t i = 0; i < C; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(C);
    const float m = static_cast<float>(mean);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (int64_t i = 0; i < C; ++i) yr[i] = (xr[i] - m) * rstd * w[i] + b[i];
  }
}

void gelu_tanh_forward(float* y, const float* x, int64_t n) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

template <class W>
void matmul_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
                   int64_t nout) {
  if (rows <= 2) {
    // Decode: memory-bound. Each thread owns a contiguous range of output columns and streams
    // its part of every weight row once, accumulating in y (which stays in L1).
    const int64_t nthreads = num_threads();
    const int64_t chunk = ((nout + nthreads - 1) / nthreads + 15) / 16 * 16;
    parallel_for(0, nthreads, 1, [&](int64_t th) {
      const int64_t c0 = th * chunk, c1 = std::min(nout, c0 + chunk);
      if (c0 >= c1) return;
      for (int64_t r = 0; r < rows; ++r) {
        float* yr = y + r * nout;
        for (int64_t c = c0; c < c1; ++c) yr[c] = b ? b[c] : 0.0f;
        for (int64_t i = 0; i < nin; ++i) {
          const float xv = x[r * nin + i];
          const W* wi = w + i * nout;
          int64_t c = c0;
          for (; c + 16 <= c1; c += 16) store16(yr + c, load16(yr + c) + xv * load16(wi + c));
          for (; c < c1; ++c) yr[c] += xv * to_float(wi[c]);
        }
      }
    });
    return;
  }
  // Prefill: compute-bound. Columns in blocks of 64 (four 16-wide vectors), rows in blocks of
  // 6: 24 accumulators stay in registers while the block's weights stream past once.
  constexpr int64_t kCols = 64, kRows = 6;
  const int64_t nblocks = (nout + kCols - 1) / kCols;
  parallel_for(0, nblocks, 1, [&](int64_t blk) {
    const int64_t c0 = blk * kCols;
    const int64_t width = std::min(kCols, nout - c0);
    if (width < kCols) {  // ragged last block: plain loops
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = c0; c < nout; ++c) {
          float acc = b ? b[c] : 0.0f;
          for (int64_t i = 0; i < nin; ++i) acc += x[r * nin + i] * to_float(w[i * nout + c]);
          y[r * nout + c] = acc;
        }
      }
      return;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      const int64_t nr = std::min(kRows, rows - r0);
      f32x16 acc[kRows][4];
      for (int64_t r = 0; r < kRows; ++r) {
        for (int v = 0; v < 4; ++v) acc[r][v] = b ? load16(b + c0 + 16 * v) : f32x16{};
      }
      for (int64_t i = 0; i < nin; ++i) {
        const W* wi = w + i * nout + c0;
        const f32x16 w0 = load16(wi), w1 = load16(wi + 16), w2 = load16(wi + 32),
                     w3 = load16(wi + 48);
        for (int64_t r = 0; r < nr; ++r) {
          const float xv = x[(r0 + r) * nin + i];
          acc[r][0] += xv * w0;
          acc[r][1] += xv * w1;
          acc[r][2] += xv * w2;
          acc[r][3] += xv * w3;
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        for (int v = 0; v < 4; ++v) store16(y + (r0 + r) * nout + c0 + 16 * v, acc[r][v]);
      }
    }
  });
}

template <class W>
void matmul_out_in(float* y, const float* x, const W* w, int64_t rows, int64_t nin, int64_t nout) {
  parallel_for(0, nout, 64, [&](int64_t o) {
    const W* wo = w + o * nin;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * nin;
      f32x16 acc{};
      int64_t i = 0;
      for (; i + 16 <= nin; i += 16) acc += load16(xr + i) * load16(wo + i);
      float s = hsum(acc);
      for (; i < nin; ++i) s += xr[i] * to_float(wo[i]);
      y[r * nout + o] = s;
    }
  });
}

template <class KV>
void attention_cached(float* out, const float* q, const KV* k_cache, const KV* v_cache, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head) {
  const int64_t hd = C / n_head;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  parallel_for(0, n_head, 1, [&](int64_t h) {
    std::vector<float> att(static_cast<size_t>(t1));
    for (int64_t t = t0; t < t1; ++t) {
      const float* qt = q + (t - t0) * C + h * hd;
      float mx = -INFINITY;
      for (int64_t s = 0; s <= t; ++s) {
        const KV* ks = k_cache + s * C + h * hd;
        float dot = 0;
        for (int64_t j = 0; j < hd; ++j) dot += qt[j] * to_float(ks[j]);
        att[s] = dot * scale;
        mx = std::max(mx, att[s]);
      }
      float sum = 0;
      for (int64_t s = 0; s <= t; ++s) sum += att[s] = std::exp(att[s] - mx);
      const float inv = 1.0f / sum;
      float* ot = out + (t - t0) * C + h * hd;
      for (int64_t j = 0; j < hd; ++j) ot[j] = 0;
      for (int64_t s = 0; s <= t; ++s) {
        const float a = att[s] * inv;
        const KV* vs = v_cache + s * C + h * hd;
        for (int64_t j = 0; j < hd; ++j) ot[j] += a * to_float(vs[j]);
      }
    }
  });
}

template void matmul_in_out<float>(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t);
template void matmul_in_out<Bf16>(float*, const float*, const Bf16*, const float*, int64_t, int64_t, int64_t);
template void matmul_in_out<F16>(float*, const float*, const F16*, const float*, int64_t, int64_t, int64_t);
template void matmul_out_in<float>(float*, const float*, const float*, int64_t, int64_t, int64_t);
template void matmul_out_in<Bf16>(float*, const float*, const Bf16*, int64_t, int64_t, int64_t);
template void matmul_out_in<F16>(float*, const float*, const F16*, int64_t, int64_t, int64_t);
template void attention_cached<float>(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void attention_cached<Bf16>(float*, const float*, const Bf16*, const Bf16*, int64_t, int64_t, int64_t, int64_t);
template void attention_cached<F16>(float*, const float*, const F16*, const F16*, int64_t, int64_t, int64_t, int64_t);

}  // namespace tinylm::kernels
