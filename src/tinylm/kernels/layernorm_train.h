#pragma once
// LayerNorm for training: the forward saves each row's mean and 1/std for the backward
// (llm.c's pair). Instantiated for float (the training path, vectorized, rows split across
// threads) and double (the finite-difference reference).
#include <cstdint>

namespace tinylm::kernels {

// y = (x - mean) * rstd * w + b per row, rstd = 1 / sqrt(var + eps) with the biased variance
// (torch.nn.functional.layer_norm). y, x: (rows, C); w, b: (C); mean, rstd: (rows).
template <class T>
void layernorm_forward_train(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b,
                             int64_t rows, int64_t C, T eps);

// dx += dL/dx; dw += dL/dw; db += dL/db from dy = dL/dy and the forward's x, mean, rstd.
// Accumulating into dx lets a residual stream's gradient pass straight through.
template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, const T* mean,
                        const T* rstd, int64_t rows, int64_t C);

}  // namespace tinylm::kernels
