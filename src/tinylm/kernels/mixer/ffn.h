#pragma once
// The expert feed-forward network of EvermindLM, no biases:
//   y = W_down · gelu(W_up · x),   W_up [H × D], W_down [D × H]
// over n rows at once. The forward reads transposed copies (upT [D × H], downT [H × D]) so
// its products run along contiguous rows; the backward reads the parameters as stored.
//
// Contract: row-invariant, from its parts (matmul/small.h's single-chain products and
// activation/gelu.h); double is the reference.
#include <cstdint>

namespace tinylm::kernels {

// x [n × D] → h = x W_upᵀ, a = gelu(h) [n × H] (saved), y [n × D] written.
template <class T>
void ffn_forward(T* y, T* h, T* a, const T* x, const T* upT, const T* downT, int64_t n, int64_t D,
                 int64_t H);

// dy [n × D] → dx [n × D] written; dup [H × D] and ddown [D × H] accumulated (+=).
// scratch: n × H.
template <class T>
void ffn_backward(T* dx, T* dup, T* ddown, T* scratch, const T* dy, const T* x, const T* h,
                  const T* a, const T* up, const T* down, int64_t n, int64_t D, int64_t H);

}  // namespace tinylm::kernels
