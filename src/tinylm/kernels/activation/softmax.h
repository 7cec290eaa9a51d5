#pragma once
// microgpt's softmax, with the maximum subtracted. The normalisation multiplies by
// pow(total, -1), as microgpt.py's `e / total` (= e * total**-1) does.
//
// Contract: exact. Plain loops in CPython's order: double results match CPython's bit for bit.
#include <cmath>
#include <cstdint>

#include "tinylm/core/py_math.h"

namespace tinylm::kernels {

// p: (n)   x: (n); p may alias x.
template <class T>
void softmax_forward(T* p, const T* x, int64_t n) {
  T mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  T total = T(0);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::exp(x[i] + (-mx));
    total += p[i];
  }
  const T inv = py_reciprocal(total);
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] * inv;
}

// Accumulates dx (+=) from dp, given the forward's output p: dx_i = p_i (dp_i - sum_j p_j dp_j).
template <class T>
void softmax_backward(T* dx, const T* dp, const T* p, int64_t n) {
  T dot = T(0);
  for (int64_t i = 0; i < n; ++i) dot += p[i] * dp[i];
  for (int64_t i = 0; i < n; ++i) dx[i] += p[i] * (dp[i] - dot);
}

}  // namespace tinylm::kernels
