#pragma once
// Linear layer with an [out][in] row-major weight (PyTorch nn.Linear / microgpt layout) and
// no bias: y = W x for each of `rows` input vectors.
//
// Every output is summed in input-index order starting from zero, as microgpt.py's
// `sum(wi * xi for ...)` does, so results are reproducible bit for bit.
#include <cstdint>

namespace tinylm::kernels {

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

// The same products and sums as linear_forward, from a transposed, padded weight
// wt: (nin, ld) with ld = a multiple of 8 >= nout and zero columns past nout. Each output
// still sums its inputs in index order from zero (bit-identical results), but eight outputs
// share one vector register, so the loop runs at vector speed.
inline constexpr int64_t kLinearLanes = 8;
inline int64_t padded_width(int64_t nout) {
  return (nout + kLinearLanes - 1) / kLinearLanes * kLinearLanes;
}

inline void linear_forward_packed(double* y, const double* x, const double* wt, int64_t rows,
                                  int64_t nin, int64_t nout) {
  using v8d = double __attribute__((vector_size(64)));
  const int64_t ld = padded_width(nout);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * nin;
    double* yr = y + r * nout;
    for (int64_t o = 0; o < ld; o += kLinearLanes) {
      v8d acc = {};
      for (int64_t i = 0; i < nin; ++i) {
        v8d w;
        __builtin_memcpy(&w, wt + i * ld + o, sizeof w);
        acc += w * xr[i];
      }
      const int64_t n = nout - o < kLinearLanes ? nout - o : kLinearLanes;
      __builtin_memcpy(yr + o, &acc, static_cast<size_t>(n) * sizeof(double));
    }
  }
}

// wt = transpose(w), padded: w (rows, cols) -> wt (cols, padded_width(rows)), zeros past rows.
template <class T>
void transpose_padded(T* wt, const T* w, int64_t rows, int64_t cols) {
  const int64_t ld = padded_width(rows);
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < ld; ++r) wt[c * ld + r] = r < rows ? w[r * cols + c] : T(0);
  }
}

// Accumulates (+=) dx: (rows, nin) and dw: (nout, nin) from dy: (rows, nout).
// Rows are visited last to first, the order in which reverse-mode autodiff of a
// position-by-position forward reaches them.
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

}  // namespace tinylm::kernels
