// kernels/mixer/causal_conv.h: vectors along the channels; forward and step share one row
// function, so their arithmetic is the same.
#include "tinylm/kernels/mixer/causal_conv.h"

#include <algorithm>

#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/mixer/causal_conv_reference.h"

TINYLM_LEVEL_BEGIN

namespace {

// y = Σ_{j < taps} kerT[j] ⊙ row(j), row(j) the input j steps back.
template <class Row>
TINYLM_INLINE void conv_row(float* y, const Row& row, int64_t taps, const float* kerT, int64_t D) {
  for (int64_t c = 0; c < D; c += kLanes) {
    const int64_t w = std::min(kLanes, D - c);
    f32x16 acc{};
    for (int64_t j = 0; j < taps; ++j)
      acc = fma(load_n(kerT + j * D + c, w), load_n(row(j) + c, w), acc);
    store_n(y + c, acc, w);
  }
}

}  // namespace

void causal_conv_step(float* y, const float* const* hist, int64_t taps, const float* kerT,
                      int64_t D) {
  conv_row(
      y, [&](int64_t j) { return hist[j]; }, taps, kerT, D);
}

void causal_conv_forward(float* y, const float* x, const float* kerT, int64_t rows, int64_t D,
                         int64_t K) {
  for (int64_t t = 0; t < rows; ++t) {
    conv_row(
        y + t * D, [&](int64_t j) { return x + (t - j) * D; }, std::min(t + 1, K), kerT, D);
  }
}

void causal_conv_backward(float* dx, float* dker, const float* dy, const float* x,
                          const float* kerT, int64_t rows, int64_t D, int64_t K) {
  // dx[s][c] = Σ_{j: s+j < rows} ker[c][j] · dy[s+j][c]
  for (int64_t s = 0; s < rows; ++s) {
    conv_row(
        dx + s * D, [&](int64_t j) { return dy + (s + j) * D; }, std::min(K, rows - s), kerT, D);
  }
  // dker[c][j] += Σ_{t >= j} dy[t][c] · x[t-j][c]
  for (int64_t j = 0; j < K; ++j) {
    for (int64_t c = 0; c < D; c += kLanes) {
      const int64_t w = std::min(kLanes, D - c);
      f32x16 acc{};
      for (int64_t t = j; t < rows; ++t)
        acc = fma(load_n(dy + t * D + c, w), load_n(x + (t - j) * D + c, w), acc);
      float lanes[kLanes];
      store(lanes, acc);
      for (int64_t i = 0; i < w; ++i) dker[(c + i) * K + j] += lanes[i];
    }
  }
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_CAUSAL_CONV_ENTRIES(X)                                                              \
  X(void causal_conv_step(float* y, const float* const* hist, int64_t taps, const float* kerT,     \
                          int64_t D),                                                              \
    causal_conv_step, (y, hist, taps, kerT, D))                                                    \
  X(void causal_conv_forward(float* y, const float* x, const float* kerT, int64_t rows, int64_t D, \
                             int64_t K),                                                           \
    causal_conv_forward, (y, x, kerT, rows, D, K))                                                 \
  X(void causal_conv_backward(float* dx, float* dker, const float* dy, const float* x,             \
                              const float* kerT, int64_t rows, int64_t D, int64_t K),              \
    causal_conv_backward, (dx, dker, dy, x, kerT, rows, D, K))
TINYLM_PUBLIC_ENTRIES(TINYLM_CAUSAL_CONV_ENTRIES)

void causal_conv_step(double* y, const double* const* hist, int64_t taps, const double* kerT,
                      int64_t D) {
  reference::causal_conv_step(y, hist, taps, kerT, D);
}
void causal_conv_forward(double* y, const double* x, const double* kerT, int64_t rows, int64_t D,
                         int64_t K) {
  reference::causal_conv_forward(y, x, kerT, rows, D, K);
}
void causal_conv_backward(double* dx, double* dker, const double* dy, const double* x,
                          const double* kerT, int64_t rows, int64_t D, int64_t K) {
  reference::causal_conv_backward(dx, dker, dy, x, kerT, rows, D, K);
}

}  // namespace tinylm::kernels
#endif
