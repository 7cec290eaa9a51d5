#pragma once
// kernels/attention/causal.h's training forward and backward as plain loops, for any number
// type. Per (sequence, head) with P the saved probabilities and dS = dL/d(scores):
//   forward   S = Q K^T / sqrt(D) (causal), P = softmax(S), O = P V
//   backward  dP = dO V^T, dS = P (dP - rowsum(P dP)) / sqrt(D), dQ = dS K, dK = dS^T Q,
//             dV = P^T dO
// With attention-weight dropout (mask M, kept scale s): O = P' V with P' = P M s, a holds P
// negated where M is 0; backward dP = (dO V^T) M s, the same dS, dQ, dK, and dV = P'^T dO.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tinylm::kernels::reference {

// One (sequence, head): base points at q of position 0 (k at +C, v at +2C, rows 3C apart);
// o at its output (rows C apart); a: (T, T) probabilities. keep: null, or the (T, T) dropout
// mask (1: kept, scaled by keep_scale).
template <class T>
void attention_head_forward(T* o, T* a, const T* base, int64_t Tn, int64_t C, int64_t D,
                            const uint8_t* keep = nullptr, T keep_scale = 1) {
  const int64_t C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  for (int64_t t = 0; t < Tn; ++t) {
    T* at = a + t * Tn;
    T mx = -INFINITY;
    for (int64_t j = 0; j <= t; ++j) {
      T s = 0;
      for (int64_t d = 0; d < D; ++d) s += base[t * C3 + d] * base[j * C3 + C + d];
      at[j] = s;
      mx = std::max(mx, s);
    }
    T sum = 0;
    for (int64_t j = 0; j <= t; ++j) sum += at[j] = std::exp((at[j] - mx) * scale);
    for (int64_t j = 0; j <= t; ++j) at[j] /= sum;
    std::fill(at + t + 1, at + Tn, T(0));
    for (int64_t d = 0; d < D; ++d) {
      T acc = 0;
      for (int64_t j = 0; j <= t; ++j) {
        const T pj = keep ? (keep[t * Tn + j] ? at[j] * keep_scale : T(0)) : at[j];
        acc += pj * base[j * C3 + 2 * C + d];
      }
      o[t * C + d] = acc;
    }
    if (keep) {
      for (int64_t j = 0; j <= t; ++j) at[j] = keep[t * Tn + j] ? at[j] : -at[j];
    }
  }
}

// dbase: the head's columns of dqkv (written); go: its columns of dout; ds: T values scratch.
// keep_scale: 0 without dropout, else the forward's (a's signs are its mask).
template <class T>
void attention_head_backward(T* dbase, const T* go, const T* a, const T* base, T* ds, int64_t Tn,
                             int64_t C, int64_t D, T keep_scale = 0) {
  const int64_t C3 = 3 * C;
  const T scale = T(1) / std::sqrt(static_cast<T>(D));
  for (int64_t t = 0; t < Tn; ++t) {
    for (int64_t part = 0; part < 3; ++part)
      std::fill(dbase + t * C3 + part * C, dbase + t * C3 + part * C + D, T(0));
  }
  for (int64_t t = 0; t < Tn; ++t) {
    const T* at = a + t * Tn;
    // P, and with dropout whether each was kept (a dropped or kept 0 counts as dropped: its
    // products are 0 either way).
    const auto p = [&](int64_t j) { return keep_scale != T(0) ? std::abs(at[j]) : at[j]; };
    const auto kept = [&](int64_t j) { return keep_scale == T(0) || at[j] > T(0); };
    T dot = 0;
    for (int64_t j = 0; j <= t; ++j) {
      T g = 0;
      for (int64_t d = 0; d < D; ++d) g += go[t * C + d] * base[j * C3 + 2 * C + d];
      if (keep_scale != T(0)) g = kept(j) ? g * keep_scale : T(0);
      ds[j] = g;
      dot += p(j) * g;
    }
    for (int64_t j = 0; j <= t; ++j) {
      const T s = p(j) * (ds[j] - dot) * scale;
      const T pv = keep_scale == T(0) ? p(j) : kept(j) ? p(j) * keep_scale : T(0);  // P'
      for (int64_t d = 0; d < D; ++d) {
        dbase[t * C3 + d] += s * base[j * C3 + C + d];    // dQ
        dbase[j * C3 + C + d] += s * base[t * C3 + d];    // dK
        dbase[j * C3 + 2 * C + d] += pv * go[t * C + d];  // dV
      }
    }
  }
}

}  // namespace tinylm::kernels::reference
