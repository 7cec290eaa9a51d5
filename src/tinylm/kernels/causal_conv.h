#pragma once
// Causal depthwise convolution over time, EvermindLM's token mixer. Channel c at time t:
//   y[t][c] = Σ_{j=0}^{min(t, K-1)} ker[c][j] · x[t-j][c]        (x[t < 0] = 0)
// The kernel comes tap-major (kerT [K × D], the transpose of the parameter ker [D × K]) so
// the loops run along channels. Each output sums its taps in order j = 0, 1, ... starting
// from zero, in forward and step alike, so incremental decoding equals the full forward.
#include <cstdint>

namespace tinylm::kernels {

// y, x: [rows × D]. Writes y.
template <class T>
void causal_conv_forward(T* y, const T* x, const T* kerT, int64_t rows, int64_t D, int64_t K);

// One position: hist[j] is the input j steps back (hist[0] the current one), for
// j < taps <= K. Writes y [D].
template <class T>
void causal_conv_step(T* y, const T* const* hist, int64_t taps, const T* kerT, int64_t D);

// Writes dx = ∂/∂x (dx [rows × D]); accumulates dker (+=) in the parameter layout [D × K].
template <class T>
void causal_conv_backward(T* dx, T* dker, const T* dy, const T* x, const T* kerT, int64_t rows, int64_t D,
                          int64_t K);

}  // namespace tinylm::kernels
