#pragma once
// microgpt's causal multi-head self-attention over one sequence, heads as contiguous slices
// of the channel dimension: out[t] = sum_{s<=t} softmax_s(q_t . k_s * scale) v_s, per head.
//
// Contract: exact. Plain loops in microgpt.py's order, no fused multiply-add: double results
// are CPython's bit for bit, at every level (the code is the same everywhere). GPT-2's
// attention is kernels/attention/causal.h.
#include <cmath>
#include <cstdint>

#include "tinylm/kernels/activation/softmax.h"

namespace tinylm::kernels {

// Rows t in [t0, t1) attend to positions 0..t; rows before t0 are a KV cache whose q/k/v are
// already filled. out: (T, C)   att: (H, ld, ld) softmax weights, row t valid for s <= t
// q, k, v: (T, C); ld >= t1 is the row stride of att.
template <class T>
void attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int64_t t0, int64_t t1,
                       int64_t C, int64_t n_head, int64_t ld, T scale) {
  const int64_t hd = C / n_head;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t t = t0; t < t1; ++t) {
      T* a = att + (h * ld + t) * ld;
      const T* qt = q + t * C + h * hd;
      for (int64_t s = 0; s <= t; ++s) {
        const T* ks = k + s * C + h * hd;
        T dot = T(0);
        for (int64_t j = 0; j < hd; ++j) dot += qt[j] * ks[j];
        a[s] = dot * scale;
      }
      softmax_forward(a, a, t + 1);
      T* ot = out + t * C + h * hd;
      for (int64_t j = 0; j < hd; ++j) {
        T acc = T(0);
        for (int64_t s = 0; s <= t; ++s) acc += a[s] * v[s * C + h * hd + j];
        ot[j] = acc;
      }
    }
  }
}

// Accumulates dq, dk, dv (+=) from dout for rows 0..nt-1. scratch: (nt) values of workspace.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, T* scratch, const T* dout, const T* att, const T* q,
                        const T* k, const T* v, int64_t nt, int64_t C, int64_t n_head, int64_t ld,
                        T scale) {
  const int64_t hd = C / n_head;
  for (int64_t t = nt - 1; t >= 0; --t) {
    for (int64_t h = n_head - 1; h >= 0; --h) {
      const T* a = att + (h * ld + t) * ld;
      const T* dot = dout + t * C + h * hd;
      T* da = scratch;
      for (int64_t s = 0; s <= t; ++s) {
        const T* vs = v + s * C + h * hd;
        T g = T(0);
        for (int64_t j = hd - 1; j >= 0; --j) g += vs[j] * dot[j];
        da[s] = g;
        T* dvs = dv + s * C + h * hd;
        for (int64_t j = 0; j < hd; ++j) dvs[j] += a[s] * dot[j];
      }
      // softmax backward in place: dlogit_s = a_s (da_s - sum a da), times the scale
      T sum = T(0);
      for (int64_t s = 0; s <= t; ++s) sum += a[s] * da[s];
      const T* qt = q + t * C + h * hd;
      T* dqt = dq + t * C + h * hd;
      for (int64_t s = 0; s <= t; ++s) {
        const T g = scale * (a[s] * (da[s] - sum));
        const T* ks = k + s * C + h * hd;
        T* dks = dk + s * C + h * hd;
        for (int64_t j = 0; j < hd; ++j) {
          dqt[j] += ks[j] * g;
          dks[j] += qt[j] * g;
        }
      }
    }
  }
}

}  // namespace tinylm::kernels
