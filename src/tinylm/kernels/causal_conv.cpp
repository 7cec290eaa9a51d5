// kernels/causal_conv.h: vectors along the channels; forward and step share one row
// function so their arithmetic is the same.
#include "tinylm/kernels/causal_conv.h"

#include <algorithm>

#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {
namespace {

using vec::kLanes;
using vec::Vec;

template <class T>
inline void conv_row(T* y, const T* const* hist, int64_t taps, const T* kerT, int64_t D) {
  constexpr int64_t W = kLanes<T>;
  for (int64_t c = 0; c < D; c += W) {
    const int64_t w = std::min(W, D - c);
    Vec<T> acc = {};
    for (int64_t j = 0; j < taps; ++j) acc += vec::load_n(kerT + j * D + c, w) * vec::load_n(hist[j] + c, w);
    vec::store_n(y + c, acc, w);
  }
}

}  // namespace

template <class T>
void causal_conv_step(T* y, const T* const* hist, int64_t taps, const T* kerT, int64_t D) {
  conv_row(y, hist, taps, kerT, D);
}

template <class T>
void causal_conv_forward(T* y, const T* x, const T* kerT, int64_t rows, int64_t D, int64_t K) {
  constexpr int64_t W = kLanes<T>;
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t taps = std::min(t + 1, K);
    for (int64_t c = 0; c < D; c += W) {  // the arithmetic of conv_row
      const int64_t w = std::min(W, D - c);
      Vec<T> acc = {};
      for (int64_t j = 0; j < taps; ++j) acc += vec::load_n(kerT + j * D + c, w) * vec::load_n(x + (t - j) * D + c, w);
      vec::store_n(y + t * D + c, acc, w);
    }
  }
}

template <class T>
void causal_conv_backward(T* dx, T* dker, const T* dy, const T* x, const T* kerT, int64_t rows, int64_t D,
                          int64_t K) {
  constexpr int64_t W = kLanes<T>;
  // dx[s][c] = Σ_{j: s+j < rows} ker[c][j] · dy[s+j][c]
  for (int64_t s = 0; s < rows; ++s) {
    const int64_t taps = std::min(K, rows - s);
    for (int64_t c = 0; c < D; c += W) {
      const int64_t w = std::min(W, D - c);
      Vec<T> acc = {};
      for (int64_t j = 0; j < taps; ++j) acc += vec::load_n(kerT + j * D + c, w) * vec::load_n(dy + (s + j) * D + c, w);
      vec::store_n(dx + s * D + c, acc, w);
    }
  }
  // dker[c][j] += Σ_{t >= j} dy[t][c] · x[t-j][c]
  for (int64_t j = 0; j < K; ++j) {
    for (int64_t c = 0; c < D; c += W) {
      const int64_t w = std::min(W, D - c);
      Vec<T> acc = {};
      for (int64_t t = j; t < rows; ++t) acc += vec::load_n(dy + t * D + c, w) * vec::load_n(x + (t - j) * D + c, w);
      T lanes[kLanes<T>];
      vec::store(lanes, acc);
      for (int64_t i = 0; i < w; ++i) dker[(c + i) * K + j] += lanes[i];
    }
  }
}

template void causal_conv_forward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t);
template void causal_conv_forward<double>(double*, const double*, const double*, int64_t, int64_t, int64_t);
template void causal_conv_step<float>(float*, const float* const*, int64_t, const float*, int64_t);
template void causal_conv_step<double>(double*, const double* const*, int64_t, const double*, int64_t);
template void causal_conv_backward<float>(float*, float*, const float*, const float*, const float*, int64_t,
                                          int64_t, int64_t);
template void causal_conv_backward<double>(double*, double*, const double*, const double*, const double*,
                                           int64_t, int64_t, int64_t);

}  // namespace tinylm::kernels
