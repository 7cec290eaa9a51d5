#pragma once
// microgpt's linear layer (no bias), in double, fast.
//
// Contract: exact. Each output is the sum of kernels/matmul/exact_reference.h, in its order,
// with no fused multiply-add: the bits of microgpt.py under CPython, at every level. The
// vector code only lets independent outputs share a register.
#include <cstdint>

namespace tinylm::kernels {

// The forward reads a transposed, zero-padded weight wt: (nin, padded_width(nout)), so eight
// outputs share one vector: y: (rows, nout), x: (rows, nin).
inline constexpr int64_t kLinearLanes = 8;
inline int64_t padded_width(int64_t nout) {
  return (nout + kLinearLanes - 1) / kLinearLanes * kLinearLanes;
}
// wt = transpose(w), padded: w (rows, cols) -> wt (cols, padded_width(rows)), zeros past rows.
template <class T>
void transpose_padded(T* wt, const T* w, int64_t rows, int64_t cols) {
  const int64_t ld = padded_width(rows);
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < ld; ++r) wt[c * ld + r] = r < rows ? w[r * cols + c] : T(0);
  }
}
void linear_forward_packed(double* y, const double* x, const double* wt, int64_t rows, int64_t nin,
                           int64_t nout);

// Accumulates (+=) dx: (rows, nin) and dw: (nout, nin) from dy: (rows, nout), w: (nout, nin).
void linear_backward(double* dx, double* dw, const double* dy, const double* x, const double* w,
                     int64_t rows, int64_t nin, int64_t nout);

}  // namespace tinylm::kernels
