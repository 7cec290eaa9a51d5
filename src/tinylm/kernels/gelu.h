#pragma once
// GELU, tanh approximation (PyTorch's gelu(approximate='tanh'), GPT-2's "gelu_new"):
//   gelu(x)  = ½ x (1 + tanh(u)),   u = √(2/π) (x + 0.044715 x³)
//   gelu'(x) = ½ (1 + t) + ½ x (1 − t²) √(2/π) (1 + 3·0.044715 x²),   t = tanh(u)
// float uses a vectorized exp (kernels/train_simd.h; relative error ~3e-7); double uses std::tanh,
// so double gradient checks see the exact function. Elementwise: an element's result does
// not depend on its neighbours, the array length or the thread count. Shared by GPT-2's and
// EvermindLM's training; large arrays are split across threads.
#include <cstdint>

namespace tinylm::kernels {

// y = gelu(x) over n elements.
template <class T>
void gelu_forward(T* y, const T* x, int64_t n);

// dx = dy ⊙ gelu'(x) (written, not accumulated; dx may alias dy).
template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n);

}  // namespace tinylm::kernels
