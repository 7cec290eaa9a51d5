#pragma once
// log(sum_j exp(x[j])) of one row of logits, in double: the max, then the sum of
// exp(x[j] - max) in index order. A row's log-softmax is x[j] - log_sum_exp(x): perplexity's
// NLL and the server's logprobs both read it.
//
// Contract: row-invariant (a plain loop in index order: the same bits at every level and
// thread count). n >= 1.
#include <cmath>
#include <cstdint>

namespace tinylm::kernels {

inline double log_sum_exp(const float* x, int64_t n) {
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - mx);
  return std::log(sum) + mx;
}

}  // namespace tinylm::kernels
