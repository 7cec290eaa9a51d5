#include "tinylm/kernels/matmul/exact.h"

#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/exact_reference.h"

TINYLM_LEVEL_BEGIN

namespace {

// Accumulator vectors one pass keeps in registers: AVX2 and the generic level have half (or a
// quarter) of AVX-512's register file. Passes over column blocks leave every sum's order alone.
constexpr int kMaxVectors = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 8 : 4;

// d[8 v ..] += the sum over k descending from n - 1 of src[k * ld + 8 v ..] * g(k), for v < NV:
// held in registers while the whole sum accumulates (loops fully unrolled), the reference's
// order.
template <int NV, class G>
TINYLM_INLINE void add_down(double* d, const double* src, int64_t ld, int64_t n, const G& g) {
  f64x8 acc[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) acc[v] = load(d + 8 * v);
  for (int64_t k = n - 1; k >= 0; --k) {
    const double gk = g(k);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[v] += load(src + k * ld + 8 * v) * gk;
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) store(d + 8 * v, acc[v]);
}

// Columns [8 v0, 8 (v0 + NV)) of dx (rows in descending order, each a sum over o descending of
// w[o] dy[r][o]) and of dw (each a sum over r descending of x[r] dy[r][o]).
template <int NV>
void backward_columns(double* dx, double* dw, const double* dy, const double* x, const double* w,
                      int64_t rows, int64_t nin, int64_t nout, int64_t v0) {
  const int64_t c0 = kLinearLanes * v0;
  for (int64_t r = rows - 1; r >= 0; --r)
    add_down<NV>(dx + r * nin + c0, w + c0, nin, nout, [&](int64_t o) { return dy[r * nout + o]; });
  for (int64_t o = 0; o < nout; ++o)
    add_down<NV>(dw + o * nin + c0, x + c0, nin, rows, [&](int64_t r) { return dy[r * nout + o]; });
}

}  // namespace

void linear_forward_packed(double* y, const double* x, const double* wt, int64_t rows, int64_t nin,
                           int64_t nout) {
  const int64_t ld = padded_width(nout);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x + r * nin;
    for (int64_t o = 0; o < ld; o += kLinearLanes) {
      f64x8 acc = splat(0.0);
      for (int64_t i = 0; i < nin; ++i) acc += load(wt + i * ld + o) * xr[i];
      const int64_t n = nout - o < kLinearLanes ? nout - o : kLinearLanes;
      store_n(y + r * nout + o, acc, n);
    }
  }
}

void linear_backward(double* dx, double* dw, const double* dy, const double* x, const double* w,
                     int64_t rows, int64_t nin, int64_t nout) {
  if (nin % kLinearLanes != 0) return reference::linear_backward(dx, dw, dy, x, w, rows, nin, nout);
  const int64_t nv = nin / kLinearLanes;
  int64_t v = 0;
  for (; v + kMaxVectors <= nv; v += kMaxVectors)
    backward_columns<kMaxVectors>(dx, dw, dy, x, w, rows, nin, nout, v);
  for (; v + 2 <= nv; v += 2) backward_columns<2>(dx, dw, dy, x, w, rows, nin, nout, v);
  for (; v < nv; ++v) backward_columns<1>(dx, dw, dy, x, w, rows, nin, nout, v);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_EXACT_MATMUL_ENTRIES(X)                                                     \
  X(void linear_forward_packed(double* y, const double* x, const double* wt, int64_t rows, \
                               int64_t nin, int64_t nout),                                 \
    linear_forward_packed, (y, x, wt, rows, nin, nout))                                    \
  X(void linear_backward(double* dx, double* dw, const double* dy, const double* x,        \
                         const double* w, int64_t rows, int64_t nin, int64_t nout),        \
    linear_backward, (dx, dw, dy, x, w, rows, nin, nout))
TINYLM_PUBLIC_ENTRIES(TINYLM_EXACT_MATMUL_ENTRIES)

}  // namespace tinylm::kernels
#endif
