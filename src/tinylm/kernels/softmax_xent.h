#pragma once
// Softmax cross-entropy over rows of logits, in place: the forward turns each row into
// its probabilities and returns the summed loss Σ_r (logsumexp(l_r) − l_r[target_r]); the
// backward turns the probabilities into ∂loss/∂logits = scale · (p − onehot(target)).
// float uses a vectorized exp (kernels/vec.h, ~2e-7 relative); double uses std::exp.
#include <cstdint>

namespace tinylm::kernels {

// logits: rows × V with row stride ld; targets in [0, V) (checked by the caller). The sum is
// accumulated in double.
template <class T>
double softmax_xent_forward(T* logits, const int* targets, int64_t rows, int64_t V, int64_t ld);

template <class T>
void softmax_xent_backward(T* probs, const int* targets, int64_t rows, int64_t V, int64_t ld, T scale);

}  // namespace tinylm::kernels
