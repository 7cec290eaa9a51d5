#pragma once
// kernels/mixer/causal_conv.h as plain loops (each output one fused multiply-add chain over the
// taps), for any number type.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tinylm::kernels::reference {

template <class T>
void causal_conv_step(T* y, const T* const* hist, int64_t taps, const T* kerT, int64_t D) {
  for (int64_t c = 0; c < D; ++c) {
    T acc = 0;
    for (int64_t j = 0; j < taps; ++j) acc = std::fma(kerT[j * D + c], hist[j][c], acc);
    y[c] = acc;
  }
}

template <class T>
void causal_conv_forward(T* y, const T* x, const T* kerT, int64_t rows, int64_t D, int64_t K) {
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t c = 0; c < D; ++c) {
      T acc = 0;
      for (int64_t j = 0; j < std::min(t + 1, K); ++j)
        acc = std::fma(kerT[j * D + c], x[(t - j) * D + c], acc);
      y[t * D + c] = acc;
    }
  }
}

template <class T>
void causal_conv_backward(T* dx, T* dker, const T* dy, const T* x, const T* kerT, int64_t rows,
                          int64_t D, int64_t K) {
  for (int64_t s = 0; s < rows; ++s) {  // dx[s][c] = Σ_{j: s+j < rows} ker[c][j] · dy[s+j][c]
    for (int64_t c = 0; c < D; ++c) {
      T acc = 0;
      for (int64_t j = 0; j < std::min(K, rows - s); ++j)
        acc = std::fma(kerT[j * D + c], dy[(s + j) * D + c], acc);
      dx[s * D + c] = acc;
    }
  }
  for (int64_t j = 0; j < K; ++j) {  // dker[c][j] += Σ_{t >= j} dy[t][c] · x[t-j][c]
    for (int64_t c = 0; c < D; ++c) {
      T acc = 0;
      for (int64_t t = j; t < rows; ++t) acc = std::fma(dy[t * D + c], x[(t - j) * D + c], acc);
      dker[c * K + j] += acc;
    }
  }
}

}  // namespace tinylm::kernels::reference
