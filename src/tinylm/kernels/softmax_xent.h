#pragma once
// Softmax cross-entropy over rows of logits, in place: the forward turns each row into
// e = exp(l − max l) (the probabilities before normalization), keeps 1 / Σ e per row and
// returns the summed loss Σ_r (logsumexp(l_r) − l_r[target_r]); the backward turns e into
// ∂loss/∂logits = scale · (e / Σ e − onehot(target)). Normalizing in the backward saves a
// pass over the logits.
// float uses a vectorized exp (kernels/train_simd.h, ~2e-7 relative); double uses std::exp.
#include <cstdint>

namespace tinylm::kernels {

// logits: rows × V with row stride ld; inv_sum: rows; targets in [0, V) (checked by the
// caller). The sum is accumulated in double.
template <class T>
double softmax_xent_forward(T* logits, T* inv_sum, const int* targets, int64_t rows, int64_t V, int64_t ld);

template <class T>
void softmax_xent_backward(T* e, const T* inv_sum, const int* targets, int64_t rows, int64_t V, int64_t ld,
                           T scale);

}  // namespace tinylm::kernels
