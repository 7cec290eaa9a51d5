#pragma once
// Softmax cross-entropy over rows of logits, for training (GPT-2's 50257-word and
// EvermindLM's vocabularies): the forward keeps the logits and each row's log-sum-exp, the
// backward computes the gradient from them.
//
// Contract: row-invariant (a row's loss and gradient depend on that row alone, at any thread
// count and level), float with kernels/cpu/vec_math.h's exp (~2e-7 relative) and the C
// library's log. double is the reference (std::exp, std::log), for finite-difference checks.
// microgpt's loss is computed in its exact engine with activation/softmax.h.
#include <cstdint>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

// lse[r] = log(sum_j exp(logits[r][j])); losses[r] = lse[r] - logits[r][targets[r]] (losses
// may be null). Returns the sum of the losses, accumulated in double. logits: (rows, V);
// targets trusted (in [0, V)). Rows are split across threads.
double cross_entropy_forward(float* losses, float* lse, const float* logits, const int32_t* targets,
                             int64_t rows, int64_t V);
double cross_entropy_forward(double* losses, double* lse, const double* logits,
                             const int32_t* targets, int64_t rows, int64_t V);

// dlogits = scale * (softmax(logits) - onehot(target)): the gradient of scale * sum(losses).
// dlogits may equal logits. For a mean loss, scale = loss_scale / rows.
void cross_entropy_backward(float* dlogits, const float* logits, const float* lse,
                            const int32_t* targets, int64_t rows, int64_t V, float scale);
void cross_entropy_backward(double* dlogits, const double* logits, const double* lse,
                            const int32_t* targets, int64_t rows, int64_t V, double scale);
// The same gradient rounded to bf16 (the bf16 path's matrix-product operand); the target's
// entry is computed in float and rounded once.
void cross_entropy_backward(Bf16* dlogits, const float* logits, const float* lse,
                            const int32_t* targets, int64_t rows, int64_t V, float scale);

// The same loss, with each row of logits replaced in place by e = exp(l - max l) and
// norm[r] = 1 / sum(e): one exp pass in all, for callers that do not need the logits again;
// the backward from e and norm needs no exp.
double cross_entropy_forward_inplace(float* losses, float* norm, float* logits,
                                     const int32_t* targets, int64_t rows, int64_t V);
double cross_entropy_forward_inplace(double* losses, double* norm, double* logits,
                                     const int32_t* targets, int64_t rows, int64_t V);
// dlogits = scale * (e * norm - onehot(target)); dlogits may equal e.
void cross_entropy_backward_exp(float* dlogits, const float* e, const float* norm,
                                const int32_t* targets, int64_t rows, int64_t V, float scale);
void cross_entropy_backward_exp(double* dlogits, const double* e, const double* norm,
                                const int32_t* targets, int64_t rows, int64_t V, double scale);

}  // namespace tinylm::kernels
