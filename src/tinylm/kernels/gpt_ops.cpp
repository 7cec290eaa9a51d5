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
    // Decode: memory-bound. Each thread streams a contiguous block of weight rows, four rows
    // per pass over its private partial sums (so the sums are loaded and stored once per four
    // rows), then the threads add their partials. Contiguous streams reach ~80% of the
    // machine's read bandwidth where splitting columns reached ~40%.
    const int64_t nthreads = std::min<int64_t>(num_threads(), std::max<int64_t>(1, nin / 64));
    // Scratch owned by the calling thread: grown once, then reused every token.
    thread_local std::vector<float> partial;
    partial.resize(static_cast<size_t>(nthreads * rows * nout));
    float* part = partial.data();
    const int64_t full = nout / 16 * 16;
    parallel_for(0, nthreads, 1, [&](int64_t th) {
      const int64_t i0 = nin * th / nthreads, i1 = nin * (th + 1) / nthreads;
      for (int64_t r = 0; r < rows; ++r) {
        float* py = part + (th * rows + r) * nout;
        std::fill(py, py + nout, 0.0f);
        const float* xr = x + r * nin;
        int64_t i = i0;
        for (; i + 4 <= i1; i += 4) {
          const float x0 = xr[i], x1 = xr[i + 1], x2 = xr[i + 2], x3 = xr[i + 3];
          const W* w0 = w + i * nout;
          const W* w1 = w0 + nout;
          const W* w2 = w1 + nout;
          const W* w3 = w2 + nout;
          for (int64_t c = 0; c < full; c += 16) {
            store16(py + c, load16(py + c) + x0 * load16(w0 + c) + x1 * load16(w1 + c) +
                                x2 * load16(w2 + c) + x3 * load16(w3 + c));
          }
          for (int64_t c = full; c < nout; ++c) {
            py[c] += x0 * to_float(w0[c]) + x1 * to_float(w1[c]) + x2 * to_float(w2[c]) +
                     x3 * to_float(w3[c]);
          }
        }
        for (; i < i1; ++i) {
          const W* wi = w + i * nout;
          for (int64_t c = 0; c < nout; ++c) py[c] += xr[i] * to_float(wi[c]);
        }
      }
    });
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < nout; ++c) {
        float sum = b ? b[c] : 0.0f;
        for (int64_t th = 0; th < nthreads; ++th) sum += part[(th * rows + r) * nout + c];
        y[r * nout + c] = sum;
      }
    }
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
  // Four outputs at a time: four independent accumulator chains keep the FMA units busy.
  const int64_t full = nin / 16 * 16;
  const auto dot_tail = [&](const W* wo, const float* xr) {
    float s = 0;
    for (int64_t i = full; i < nin; ++i) s += xr[i] * to_float(wo[i]);
    return s;
  };
  parallel_for(0, (nout + 3) / 4, 16, [&](int64_t blk) {
    const int64_t o0 = blk * 4, n = std::min<int64_t>(4, nout - o0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * nin;
      if (n < 4) {
        for (int64_t o = o0; o < o0 + n; ++o) {
          f32x16 acc{};
          for (int64_t i = 0; i < full; i += 16) acc += load16(xr + i) * load16(w + o * nin + i);
          y[r * nout + o] = hsum(acc) + dot_tail(w + o * nin, xr);
        }
        continue;
      }
      const W* w0 = w + o0 * nin;
      f32x16 a0{}, a1{}, a2{}, a3{};
      for (int64_t i = 0; i < full; i += 16) {
        const f32x16 xv = load16(xr + i);
        a0 += xv * load16(w0 + i);
        a1 += xv * load16(w0 + nin + i);
        a2 += xv * load16(w0 + 2 * nin + i);
        a3 += xv * load16(w0 + 3 * nin + i);
      }
      y[r * nout + o0] = hsum(a0) + dot_tail(w0, xr);
      y[r * nout + o0 + 1] = hsum(a1) + dot_tail(w0 + nin, xr);
      y[r * nout + o0 + 2] = hsum(a2) + dot_tail(w0 + 2 * nin, xr);
      y[r * nout + o0 + 3] = hsum(a3) + dot_tail(w0 + 3 * nin, xr);
    }
  });
}

template <class KV>
void attention_cached(float* out, const float* q, const KV* k_cache, const KV* v_cache, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head) {
  const int64_t hd = C / n_head;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  parallel_for(0, n_head, 1, [&](int64_t h) {
    // Per-thread scratch, grown once: no allocation per head per token.
    thread_local std::vector<float> att;
    if (att.size() < static_cast<size_t>(t1)) att.resize(static_cast<size_t>(t1));
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
