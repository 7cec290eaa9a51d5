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
// position-by-position forward reaches them; outputs likewise from last to first.
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

namespace detail {
// linear_backward for nin = 8 * NV: each row of dx and of dw is held in NV vector registers
// while its whole sum accumulates, in the same order as the generic loop.
template <int NV>
void linear_backward_blocked(double* dx, double* dw, const double* dy, const double* x,
                             const double* w, int64_t rows, int64_t nin, int64_t nout) {
  using v8d = double __attribute__((vector_size(64)));
  v8d acc[NV];
  for (int64_t r = rows - 1; r >= 0; --r) {  // dx[r] += sum over o (descending) of w[o] dy[r][o]
    __builtin_memcpy(acc, dx + r * nin, sizeof acc);
    for (int64_t o = nout - 1; o >= 0; --o) {
      const double g = dy[r * nout + o];
      for (int v = 0; v < NV; ++v) {
        v8d wv;
        __builtin_memcpy(&wv, w + o * nin + 8 * v, sizeof wv);
        acc[v] += wv * g;
      }
    }
    __builtin_memcpy(dx + r * nin, acc, sizeof acc);
  }
  for (int64_t o = 0; o < nout; ++o) {  // dw[o] += sum over r (descending) of x[r] dy[r][o]
    __builtin_memcpy(acc, dw + o * nin, sizeof acc);
    for (int64_t r = rows - 1; r >= 0; --r) {
      const double g = dy[r * nout + o];
      for (int v = 0; v < NV; ++v) {
        v8d xv;
        __builtin_memcpy(&xv, x + r * nin + 8 * v, sizeof xv);
        acc[v] += xv * g;
      }
    }
    __builtin_memcpy(dw + o * nin, acc, sizeof acc);
  }
}
}  // namespace detail

// Double precision: register-blocked when nin is a multiple of 8 up to 64, bit-identical to
// the generic loop (each element's sum is taken in the same order).
inline void linear_backward(double* dx, double* dw, const double* dy, const double* x,
                            const double* w, int64_t rows, int64_t nin, int64_t nout) {
  switch (nin % 8 == 0 ? nin / 8 : 0) {
    case 1: return detail::linear_backward_blocked<1>(dx, dw, dy, x, w, rows, nin, nout);
    case 2: return detail::linear_backward_blocked<2>(dx, dw, dy, x, w, rows, nin, nout);
    case 4: return detail::linear_backward_blocked<4>(dx, dw, dy, x, w, rows, nin, nout);
    case 8: return detail::linear_backward_blocked<8>(dx, dw, dy, x, w, rows, nin, nout);
    default: return linear_backward<double>(dx, dw, dy, x, w, rows, nin, nout);
  }
}

}  // namespace tinylm::kernels
