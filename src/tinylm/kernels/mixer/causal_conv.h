#pragma once
// Causal depthwise convolution over time, EvermindLM's token mixer. Channel c at time t:
//   y[t][c] = Σ_{j=0}^{min(t, K-1)} ker[c][j] · x[t-j][c]        (x[t < 0] = 0)
// The kernel comes tap-major (kerT [K × D], the transpose of the parameter ker [D × K]) so the
// loops run along channels.
//
// Contract: row-invariant. Each output is one chain of fused multiply-adds over the taps
// j = 0, 1, ... from zero, in forward and step alike, so incremental decoding equals the full
// forward, at every level. double is the reference.
#include <cstdint>

namespace tinylm::kernels {

// y, x: [rows × D]. Writes y.
void causal_conv_forward(float* y, const float* x, const float* kerT, int64_t rows, int64_t D,
                         int64_t K);
void causal_conv_forward(double* y, const double* x, const double* kerT, int64_t rows, int64_t D,
                         int64_t K);

// One position: hist[j] is the input j steps back (hist[0] the current one), for
// j < taps <= K. Writes y [D].
void causal_conv_step(float* y, const float* const* hist, int64_t taps, const float* kerT,
                      int64_t D);
void causal_conv_step(double* y, const double* const* hist, int64_t taps, const double* kerT,
                      int64_t D);

// Writes dx = ∂/∂x (dx [rows × D]); accumulates dker (+=) in the parameter layout [D × K].
void causal_conv_backward(float* dx, float* dker, const float* dy, const float* x,
                          const float* kerT, int64_t rows, int64_t D, int64_t K);
void causal_conv_backward(double* dx, double* dker, const double* dy, const double* x,
                          const double* kerT, int64_t rows, int64_t D, int64_t K);

}  // namespace tinylm::kernels
