#pragma once
// GELU, tanh approximation (PyTorch's gelu(approximate='tanh'), GPT-2's "gelu_new"):
//   gelu(x)  = ½ x (1 + tanh(u)),   u = √(2/π) (x + 0.044715 x³)
//   gelu'(x) = ½ (1 + t) + ½ x (1 − t²) √(2/π) (1 + 3·0.044715 x²),   t = tanh(u)
//
// Contract: elementwise, so row-invariant: an element's result depends on it alone, not on
// the array's length, the thread count or the level. float runs the vector exp of
// kernels/cpu/vec_math.h (relative error ~3e-7 against the formula); double is the reference
// (std::tanh), for finite-difference checks. Large arrays are split across threads.
#include <cstdint>

namespace tinylm::kernels {

// y = gelu(x) over n elements; y may equal x.
void gelu_forward(float* y, const float* x, int64_t n);
void gelu_forward(double* y, const double* x, int64_t n);

// dx = dy ⊙ gelu'(x) (written, not accumulated; dx may alias dy).
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n);
void gelu_backward(double* dx, const double* dy, const double* x, int64_t n);

}  // namespace tinylm::kernels
