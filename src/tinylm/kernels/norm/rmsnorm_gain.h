#pragma once
// RMSNorm with a learned gain, as EvermindLM uses it (norm/rmsnorm.h is microgpt's, without a
// gain, reproducing CPython's operations):
//   y = g ⊙ x · r,   r = 1 / sqrt(mean(x²) + eps)          per row of n
// The backward, with x̂ = x·r and gy = g ⊙ dy:
//   dx += r · (gy − x̂ · (Σ gy ⊙ x̂) / n),   dg += Σ_rows dy ⊙ x̂
//
// Contract: row-invariant (a row alone, or inside a batch, gives the same bits, at every
// level), which keeps EvermindLM's incremental decoder equal to its full forward. double is
// the reference (plain loops).
#include <cstdint>

namespace tinylm::kernels {

// y, x: [rows × n]; rstd: [rows], saved for the backward; g: [n].
void rmsnorm_gain_forward(float* y, float* rstd, const float* x, const float* g, int64_t rows,
                          int64_t n, float eps);
void rmsnorm_gain_forward(double* y, double* rstd, const double* x, const double* g, int64_t rows,
                          int64_t n, double eps);

// Accumulates dx (+=) and dg (+=) from dy.
void rmsnorm_gain_backward(float* dx, float* dg, const float* dy, const float* x, const float* g,
                           const float* rstd, int64_t rows, int64_t n);
void rmsnorm_gain_backward(double* dx, double* dg, const double* dy, const double* x,
                           const double* g, const double* rstd, int64_t rows, int64_t n);

}  // namespace tinylm::kernels
