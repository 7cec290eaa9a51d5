#pragma once
// GPT-2's tanh GELU for training, forward and backward:
//   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
// float: vectorized (tanh through a polynomial exp, ~1e-7 absolute on tanh), threads split
// the elements; double: the C library's tanh, the finite-difference reference.
#include <cstdint>

namespace tinylm::kernels {

template <class T>
void gelu_tanh_train_forward(T* y, const T* x, int64_t n);

// dx = dy * gelu'(x) (written, not accumulated); x is the forward's input.
template <class T>
void gelu_tanh_train_backward(T* dx, const T* dy, const T* x, int64_t n);

}  // namespace tinylm::kernels
