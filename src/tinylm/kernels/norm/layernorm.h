#pragma once
// LayerNorm over rows (GPT-2; torch.nn.functional.layer_norm with the biased variance):
//   y = (x - mean) * rstd * w + b,   rstd = 1 / sqrt(var + eps)
// The forward optionally saves each row's mean and rstd for the backward (llm.c's pair).
//
// Contract: row-invariant. A row's result depends on that row alone (16-lane sums in a fixed
// order, two passes: the mean, then the centred squares), the same bits at any thread count,
// at every level, in training and in inference (prefill and decode). double is the reference
// (plain loops), for finite-difference checks.
#include <cstdint>

namespace tinylm::kernels {

// y, x: (rows, C); w, b: (C); mean, rstd: (rows), or both null when not needed.
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* w,
                       const float* b, int64_t rows, int64_t C, float eps);
void layernorm_forward(double* y, double* mean, double* rstd, const double* x, const double* w,
                       const double* b, int64_t rows, int64_t C, double eps);

// dx += dL/dx; dw += dL/dw; db += dL/db from dy = dL/dy and the forward's x, mean, rstd.
// Accumulating into dx lets a residual stream's gradient pass straight through.
void layernorm_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                        const float* w, const float* mean, const float* rstd, int64_t rows,
                        int64_t C);
void layernorm_backward(double* dx, double* dw, double* db, const double* dy, const double* x,
                        const double* w, const double* mean, const double* rstd, int64_t rows,
                        int64_t C);

}  // namespace tinylm::kernels
