#include "tinylm/kernels/causal_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

// Every product is arranged so the innermost loop runs over contiguous memory without a
// reduction (it vectorizes without reassociating sums): S = Q K^T and dP = dO V^T go over
// a transposed copy of K or V (D x T, per-task scratch), the rest are row axpys over D.

namespace {
template <class T>
void exp_row(T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    simd::exp_inplace(x, n);
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
  }
}

// dst (D x Tn) = the head's D columns of rows 0..Tn-1 of src (row stride ld), transposed.
template <class T>
void transpose_head(T* dst, const T* src, int64_t ld, int64_t Tn, int64_t D) {
  for (int64_t t = 0; t < Tn; ++t) {
    const T* row = src + t * ld;
    for (int64_t d = 0; d < D; ++d) dst[d * Tn + t] = row[d];
  }
}
}  // namespace

int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t C, int64_t n_head) {
  const int64_t D = C / n_head;
  return B * n_head * (D * T + T);
}

template <class T>
void causal_attention_forward(T* out, T* att, const T* qkv, T* scratch, int64_t B, int64_t Tn,
                              int64_t C, int64_t n_head) {
  const int64_t D = C / n_head, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  parallel_for(0, B * n_head, simd::grain_for(Tn * Tn * D), [&](int64_t task) {
    const int64_t b = task / n_head, h = task % n_head;
    const T* base = qkv + b * Tn * C3 + h * D;  // q of position 0; k at +C, v at +2C
    T* kt = scratch + task * (D * Tn + Tn);
    transpose_head(kt, base + C, C3, Tn, D);
    for (int64_t t = 0; t < Tn; ++t) {
      const T* q = base + t * C3;
      T* a = att + (task * Tn + t) * Tn;
      const int64_t n = t + 1;
      std::fill(a, a + Tn, T(0));
      for (int64_t d = 0; d < D; ++d) simd::axpy(a, q[d], kt + d * Tn, n);
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, a[j]);
      for (int64_t j = 0; j < n; ++j) a[j] = (a[j] - mx) * scale;
      exp_row(a, n);
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += a[j];
      const T inv = T(1) / sum;
      for (int64_t j = 0; j < n; ++j) a[j] *= inv;
      T* o = out + (b * Tn + t) * C + h * D;
      std::fill(o, o + D, T(0));
      for (int64_t j = 0; j < n; ++j) simd::axpy(o, a[j], base + j * C3 + 2 * C, D);
    }
  });
}

template <class T>
void causal_attention_backward(T* dqkv, const T* dout, const T* att, const T* qkv, T* scratch,
                               int64_t B, int64_t Tn, int64_t C, int64_t n_head) {
  const int64_t D = C / n_head, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  parallel_for(0, B * n_head, simd::grain_for(2 * Tn * Tn * D), [&](int64_t task) {
    const int64_t b = task / n_head, h = task % n_head;
    const T* base = qkv + b * Tn * C3 + h * D;
    T* dbase = dqkv + b * Tn * C3 + h * D;
    T* vt = scratch + task * (D * Tn + Tn);
    T* ds = vt + D * Tn;
    transpose_head(vt, base + 2 * C, C3, Tn, D);
    for (int64_t t = 0; t < Tn; ++t) {
      T* r = dbase + t * C3;
      std::fill(r, r + D, T(0));
      std::fill(r + C, r + C + D, T(0));
      std::fill(r + 2 * C, r + 2 * C + D, T(0));
    }
    for (int64_t t = 0; t < Tn; ++t) {
      const T* a = att + (task * Tn + t) * Tn;
      const T* go = dout + (b * Tn + t) * C + h * D;
      const int64_t n = t + 1;
      // dP row = dO_t V^T; dV += P^T dO.
      std::fill(ds, ds + n, T(0));
      for (int64_t d = 0; d < D; ++d) simd::axpy(ds, go[d], vt + d * Tn, n);
      for (int64_t j = 0; j < n; ++j) simd::axpy(dbase + j * C3 + 2 * C, a[j], go, D);
      // Softmax backward, then the score scale: dS = P (dP - sum(P dP)) / sqrt(D).
      T dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += a[j] * ds[j];
      for (int64_t j = 0; j < n; ++j) ds[j] = a[j] * (ds[j] - dot) * scale;
      // dQ_t = dS K;  dK_j += dS_j Q_t.
      const T* q = base + t * C3;
      T* dq = dbase + t * C3;
      for (int64_t j = 0; j < n; ++j) {
        simd::axpy(dq, ds[j], base + j * C3 + C, D);
        simd::axpy(dbase + j * C3 + C, ds[j], q, D);
      }
    }
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
