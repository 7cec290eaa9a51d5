#include "tinylm/kernels/causal_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

// Per (sequence, head) task, with P the saved probabilities and dS = dL/d(scores):
//   forward   S = Q K^T / sqrt(D) (causal), P = softmax(S), O = P V
//   backward  dP = dO V^T, dS = P (dP - rowsum(P dP)) / sqrt(D),
//             dQ = dS K, dK = dS^T Q, dV = P^T dO
// Every product keeps its accumulators in registers: score rows are built 16 columns at a
// time from a transposed copy of K (or V), the D-wide rows of O, dQ, dK and dV as D/16
// vectors. dK and dV are produced column by column of dS and P (each row written once), so
// no row is read and rewritten in a dependency chain. Heads whose D is not a multiple of 16
// (and the double reference) take plain loops.

namespace {

int64_t padded(int64_t T) { return (T + 15) / 16 * 16; }

// Scratch per task: a transposed K or V (D x Tp), three packed T x D blocks, the dS matrix
// (T x Tp) and one row (Tp).
int64_t task_scratch(int64_t T, int64_t D) { return D * padded(T) + 3 * T * D + T * padded(T) + padded(T); }

// dst (D x Tp) = the head's D columns of rows 0..T-1 of src (row stride ld), transposed; the
// padding columns are zero.
template <class T>
void transpose_head(T* dst, const T* src, int64_t ld, int64_t Tn, int64_t D) {
  const int64_t Tp = padded(Tn);
  for (int64_t d = 0; d < D; ++d) std::fill(dst + d * Tp + Tn, dst + d * Tp + Tp, T(0));
  for (int64_t t = 0; t < Tn; ++t) {
    const T* row = src + t * ld;
    for (int64_t d = 0; d < D; ++d) dst[d * Tp + t] = row[d];
  }
}

// Softmax of a[0..n) in place after scaling by `scale`; a[n..Tn) set to 0.
template <class T>
void softmax_row(T* a, int64_t n, int64_t Tn, T scale) {
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, a[j]);
  for (int64_t j = 0; j < n; ++j) a[j] = (a[j] - mx) * scale;
  if constexpr (std::is_same_v<T, float>) {
    simd::exp_inplace(a, n);
  } else {
    for (int64_t j = 0; j < n; ++j) a[j] = std::exp(a[j]);
  }
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += a[j];
  const T inv = T(1) / sum;
  for (int64_t j = 0; j < n; ++j) a[j] *= inv;
  std::fill(a + n, a + Tn, T(0));
}

// ---- float, D = 16 * NV ------------------------------------------------------------------

using simd::f32x16;

// A head's rows of q, k, v or dO sit C or 3C floats apart in memory: a stride that maps them
// onto a few cache sets. Each task first packs what it reads repeatedly into contiguous T x D
// blocks (or D x Tp transposes), so the loops below run from L1/L2 without conflict misses.
void pack_rows(float* dst, const float* src, int64_t ld, int64_t Tn, int64_t D) {
  for (int64_t t = 0; t < Tn; ++t) std::memcpy(dst + t * D, src + t * ld, static_cast<size_t>(D) * sizeof(float));
}

// row[0 .. ceil(n/16)*16) = x · Mt[:, 0 ..), Mt: (D x Tp) transposed keys or values.
template <int NV>
void row_times_transposed(float* row, const float* x, const float* mt, int64_t Tp, int64_t n) {
  constexpr int64_t D = 16 * NV;
  for (int64_t s0 = 0; s0 < n; s0 += 16) {
    f32x16 acc0{}, acc1{};
    const float* col = mt + s0;
    for (int64_t d = 0; d < D; d += 2) {  // two chains hide the FMA latency
      acc0 += x[d] * simd::load(col + d * Tp);
      acc1 += x[d + 1] * simd::load(col + (d + 1) * Tp);
    }
    simd::store(row + s0, acc0 + acc1);
  }
}

// out (D) = sum_{j < n} w[j] * rows[j], rows packed D apart.
template <int NV>
void weighted_row_sum(float* out, const float* w, const float* rows, int64_t n) {
  constexpr int64_t D = 16 * NV;
  f32x16 acc[NV] = {};
  for (int64_t j = 0; j < n; ++j) {
    for (int v = 0; v < NV; ++v) acc[v] += w[j] * simd::load(rows + j * D + 16 * v);
  }
  for (int v = 0; v < NV; ++v) simd::store(out + 16 * v, acc[v]);
}

// Softmax of scale * row[0..n) written to a[0..Tn) (zeros after n); row is padded to a
// multiple of 16 and is clobbered.
void softmax_row_f32(float* a, float* row, int64_t n, int64_t Tn, float scale) {
  const int64_t nb = (n + 15) / 16 * 16;
  for (int64_t j = n; j < nb; ++j) row[j] = -std::numeric_limits<float>::infinity();
  f32x16 m = simd::load(row);
  for (int64_t j = 16; j < nb; j += 16) m = simd::vmax(m, simd::load(row + j));
  const float mx = simd::hmax(m);
  f32x16 sum{};
  for (int64_t j = 0; j < nb; j += 16) {
    const f32x16 e = simd::exp((simd::load(row + j) - mx) * scale);
    simd::store(row + j, e);
  }
  for (int64_t j = n; j < nb; ++j) row[j] = 0.0f;
  for (int64_t j = 0; j < nb; j += 16) sum += simd::load(row + j);
  const float inv = 1.0f / simd::hsum(sum);
  for (int64_t j = 0; j < n; ++j) a[j] = row[j] * inv;
  std::fill(a + n, a + Tn, 0.0f);
}

template <int NV>
void forward_task_f32(float* out, float* att, const float* base, float* scratch, int64_t Tn, int64_t C) {
  constexpr int64_t D = 16 * NV;
  const int64_t C3 = 3 * C, Tp = padded(Tn);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  float* kt = scratch;         // D x Tp
  float* vp = kt + D * Tp;     // T x D
  float* row = vp + Tn * D;    // Tp
  transpose_head(kt, base + C, C3, Tn, D);
  pack_rows(vp, base + 2 * C, C3, Tn, D);
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t n = t + 1;
    row_times_transposed<NV>(row, base + t * C3, kt, Tp, n);
    float* a = att + t * Tn;
    softmax_row_f32(a, row, n, Tn, scale);
    weighted_row_sum<NV>(out + t * C, a, vp, n);
  }
}

template <int NV>
void backward_task_f32(float* dbase, const float* dout, const float* att, const float* base,
                       float* scratch, int64_t Tn, int64_t C) {
  constexpr int64_t D = 16 * NV;
  const int64_t C3 = 3 * C, Tp = padded(Tn);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  float* vt = scratch;       // D x Tp
  float* kp = vt + D * Tp;   // T x D each
  float* qp = kp + Tn * D;
  float* gp = qp + Tn * D;
  float* ds = gp + Tn * D;   // T x Tp
  transpose_head(vt, base + 2 * C, C3, Tn, D);
  pack_rows(kp, base + C, C3, Tn, D);
  pack_rows(qp, base, C3, Tn, D);
  pack_rows(gp, dout, C, Tn, D);
  // Rows: dS and dQ.
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t n = t + 1;
    const float* p = att + t * Tn;
    float* dsr = ds + t * Tp;
    row_times_transposed<NV>(dsr, gp + t * D, vt, Tp, n);  // dP row
    float dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += p[j] * dsr[j];
    for (int64_t j = 0; j < n; ++j) dsr[j] = p[j] * (dsr[j] - dot) * scale;
    weighted_row_sum<NV>(dbase + t * C3, dsr, kp, n);  // dQ_t = dS_t K
  }
  // Columns: dK_j = sum_{t >= j} dS[t][j] Q_t, dV_j = sum_{t >= j} P[t][j] dO_t.
  for (int64_t j = 0; j < Tn; ++j) {
    f32x16 dk[NV] = {}, dv[NV] = {};
    for (int64_t t = j; t < Tn; ++t) {
      const float s = ds[t * Tp + j], p = att[t * Tn + j];
      for (int v = 0; v < NV; ++v) {
        dk[v] += s * simd::load(qp + t * D + 16 * v);
        dv[v] += p * simd::load(gp + t * D + 16 * v);
      }
    }
    for (int v = 0; v < NV; ++v) {
      simd::store(dbase + j * C3 + C + 16 * v, dk[v]);
      simd::store(dbase + j * C3 + 2 * C + 16 * v, dv[v]);
    }
  }
}

// Calls fn(std::integral_constant<int, NV>) for NV = D / 16 in 1..8; false otherwise.
template <class Fn>
bool dispatch_nv(int64_t D, Fn&& fn) {
  if (D % 16 != 0) return false;
  switch (D / 16) {
    case 1: fn(std::integral_constant<int, 1>{}); return true;
    case 2: fn(std::integral_constant<int, 2>{}); return true;
    case 3: fn(std::integral_constant<int, 3>{}); return true;
    case 4: fn(std::integral_constant<int, 4>{}); return true;
    case 5: fn(std::integral_constant<int, 5>{}); return true;
    case 6: fn(std::integral_constant<int, 6>{}); return true;
    case 7: fn(std::integral_constant<int, 7>{}); return true;
    case 8: fn(std::integral_constant<int, 8>{}); return true;
    default: return false;
  }
}

// ---- any D, float or double: plain loops ---------------------------------------------------

template <class T>
void forward_task_generic(T* out, T* att, const T* base, T* scratch, int64_t Tn, int64_t C, int64_t D) {
  const int64_t C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  (void)scratch;
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t n = t + 1;
    T* a = att + t * Tn;
    const T* q = base + t * C3;
    for (int64_t j = 0; j < n; ++j) a[j] = simd::dot(q, base + j * C3 + C, D);
    softmax_row(a, n, Tn, scale);
    T* o = out + t * C;
    std::fill(o, o + D, T(0));
    for (int64_t j = 0; j < n; ++j) simd::axpy(o, a[j], base + j * C3 + 2 * C, D);
  }
}

template <class T>
void backward_task_generic(T* dbase, const T* dout, const T* att, const T* base, T* scratch,
                           int64_t Tn, int64_t C, int64_t D) {
  const int64_t C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  T* ds = scratch;
  for (int64_t t = 0; t < Tn; ++t) {
    T* r = dbase + t * C3;
    std::fill(r, r + D, T(0));
    std::fill(r + C, r + C + D, T(0));
    std::fill(r + 2 * C, r + 2 * C + D, T(0));
  }
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t n = t + 1;
    const T* p = att + t * Tn;
    const T* go = dout + t * C;
    for (int64_t j = 0; j < n; ++j) ds[j] = simd::dot(go, base + j * C3 + 2 * C, D);
    T dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += p[j] * ds[j];
    for (int64_t j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - dot) * scale;
    const T* q = base + t * C3;
    for (int64_t j = 0; j < n; ++j) {
      simd::axpy(dbase + t * C3, ds[j], base + j * C3 + C, D);  // dQ
      simd::axpy(dbase + j * C3 + C, ds[j], q, D);              // dK
      simd::axpy(dbase + j * C3 + 2 * C, p[j], go, D);          // dV
    }
  }
}

}  // namespace

int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t C, int64_t n_head) {
  return B * n_head * task_scratch(T, C / n_head);
}

template <class T>
void causal_attention_forward(T* out, T* att, const T* qkv, T* scratch, int64_t B, int64_t Tn,
                              int64_t C, int64_t n_head) {
  const int64_t D = C / n_head, C3 = 3 * C;
  parallel_for(0, B * n_head, simd::grain_for(Tn * Tn * D), [&](int64_t task) {
    const int64_t b = task / n_head, h = task % n_head;
    const T* base = qkv + b * Tn * C3 + h * D;  // q of position 0; k at +C, v at +2C
    T* o = out + b * Tn * C + h * D;
    T* a = att + task * Tn * Tn;
    T* s = scratch + task * task_scratch(Tn, D);
    bool done = false;
    if constexpr (std::is_same_v<T, float>) {
      done = dispatch_nv(D, [&](auto nv) { forward_task_f32<decltype(nv)::value>(o, a, base, s, Tn, C); });
    }
    if (!done) forward_task_generic(o, a, base, s, Tn, C, D);
  });
}

template <class T>
void causal_attention_backward(T* dqkv, const T* dout, const T* att, const T* qkv, T* scratch,
                               int64_t B, int64_t Tn, int64_t C, int64_t n_head) {
  const int64_t D = C / n_head, C3 = 3 * C;
  parallel_for(0, B * n_head, simd::grain_for(2 * Tn * Tn * D), [&](int64_t task) {
    const int64_t b = task / n_head, h = task % n_head;
    const T* base = qkv + b * Tn * C3 + h * D;
    T* dbase = dqkv + b * Tn * C3 + h * D;
    const T* go = dout + b * Tn * C + h * D;
    const T* a = att + task * Tn * Tn;
    T* s = scratch + task * task_scratch(Tn, D);
    bool done = false;
    if constexpr (std::is_same_v<T, float>) {
      done = dispatch_nv(D, [&](auto nv) { backward_task_f32<decltype(nv)::value>(dbase, go, a, base, s, Tn, C); });
    }
    if (!done) backward_task_generic(dbase, go, a, base, s, Tn, C, D);
  });
}

template void causal_attention_forward<float>(float*, float*, const float*, float*, int64_t,
                                              int64_t, int64_t, int64_t);
template void causal_attention_forward<double>(double*, double*, const double*, double*, int64_t,
                                               int64_t, int64_t, int64_t);
template void causal_attention_backward<float>(float*, const float*, const float*, const float*,
                                               float*, int64_t, int64_t, int64_t, int64_t);
template void causal_attention_backward<double>(double*, const double*, const double*,
                                                const double*, double*, int64_t, int64_t, int64_t,
                                                int64_t);

}  // namespace tinylm::kernels
