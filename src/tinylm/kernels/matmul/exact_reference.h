#pragma once
// microgpt's linear layer as plain loops, CPython's order: y = W x with W [out][in] row-major
// (PyTorch nn.Linear / microgpt layout), every output summed in input-index order from zero as
// microgpt.py's `sum(wi * xi for ...)` does, and the backward visiting rows and outputs last to
// first, as reverse-mode autodiff of the position-by-position forward reaches them. These
// define kernels/matmul/exact.h's results bit for bit.
#include <cstdint>

namespace tinylm::kernels::reference {

// y: (rows, nout)   x: (rows, nin)   w: (nout, nin)
template <class T>
void linear_forward(T* y, const T* x, const T* w, int64_t rows, int64_t nin, int64_t nout) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * nin;
    T* yr = y + r * nout;
    for (int64_t o = 0; o < nout; ++o) {
      const T* wo = w + o * nin;
      T acc = T(0);
      for (int64_t i = 0; i < nin; ++i) acc += wo[i] * xr[i];
      yr[o] = acc;
    }
  }
}

// Accumulates (+=) dx: (rows, nin) and dw: (nout, nin) from dy: (rows, nout).
template <class T>
void linear_backward(T* __restrict dx, T* __restrict dw, const T* __restrict dy,
                     const T* __restrict x, const T* __restrict w, int64_t rows, int64_t nin,
                     int64_t nout) {
  for (int64_t r = rows - 1; r >= 0; --r) {
    const T* xr = x + r * nin;
    const T* dyr = dy + r * nout;
    T* dxr = dx + r * nin;
    for (int64_t o = nout - 1; o >= 0; --o) {
      const T g = dyr[o];
      const T* wo = w + o * nin;
      T* dwo = dw + o * nin;
      for (int64_t i = 0; i < nin; ++i) {
        dwo[i] += xr[i] * g;
        dxr[i] += wo[i] * g;
      }
    }
  }
}

}  // namespace tinylm::kernels::reference
