#pragma once
// RMSNorm with a learned gain, as EvermindLM uses it (the microgpt rmsnorm.h has no gain and
// reproduces CPython's operations; this one is for speed, float or double):
//   y = g ⊙ x · r,   r = 1 / sqrt(mean(x²) + eps)          per row of n
// The backward, with x̂ = x·r and gy = g ⊙ dy:
//   dx += r · (gy − x̂ · (Σ gy ⊙ x̂) / n),   dg += Σ_rows dy ⊙ x̂
#include <cstdint>

namespace tinylm::kernels {

// y, x: [rows × n]; rstd: [rows], saved for the backward; g: [n].
template <class T>
void rmsnorm_gain_forward(T* y, T* rstd, const T* x, const T* g, int64_t rows, int64_t n, T eps);

// Accumulates dx (+=) and dg (+=) from dy.
template <class T>
void rmsnorm_gain_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* rstd, int64_t rows,
                           int64_t n);

}  // namespace tinylm::kernels
