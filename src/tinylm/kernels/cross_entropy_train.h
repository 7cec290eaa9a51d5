#pragma once
// Softmax cross-entropy over a vocabulary for training, forward and backward, rows split
// across threads. GPT-2's vocabulary makes this the largest non-matrix-product pass of a step
// (B*T rows of 50257 logits): the forward reads a row twice (max, then the sum of
// exponentials, the second read from cache) and keeps the logits; the backward reads them
// once more and writes the gradient (over the logits, or as bf16).
#include <cstdint>

#include "tinylm/kernels/half.h"

namespace tinylm::kernels {

// lse[r] = log(sum_j exp(logits[r][j])); losses[r] = lse[r] - logits[r][targets[r]].
// Returns the sum of the losses, accumulated in double. logits: (rows, V); targets trusted.
template <class T>
double cross_entropy_train_forward(T* losses, T* lse, const T* logits, const int32_t* targets,
                                   int64_t rows, int64_t V);

// dlogits = scale * (softmax(logits) - onehot(target)): the gradient of scale * sum(losses).
// dlogits may equal logits. For a mean loss, scale = loss_scale / rows.
template <class T>
void cross_entropy_train_backward(T* dlogits, const T* logits, const T* lse,
                                  const int32_t* targets, int64_t rows, int64_t V, T scale);

// The same gradient written as bf16 (the bf16 path's matrix-product operand); the float
// logits are left untouched.
void cross_entropy_train_backward_bf16(Bf16* dlogits, const float* logits, const float* lse,
                                       const int32_t* targets, int64_t rows, int64_t V,
                                       float scale);

}  // namespace tinylm::kernels
