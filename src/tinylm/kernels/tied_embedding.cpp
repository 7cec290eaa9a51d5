#include "tinylm/kernels/tied_embedding.h"

#include <algorithm>
#include <cstring>

#include "tinylm/kernels/small_gemm.h"
#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {

template <class T>
void embedding_forward(T* x, const T* emb, const int* tokens, int64_t rows, int64_t D) {
  for (int64_t t = 0; t < rows; ++t) {
    std::memcpy(x + t * D, emb + static_cast<int64_t>(tokens[t]) * D, static_cast<size_t>(D) * sizeof(T));
  }
}

template <class T>
void embedding_backward(T* demb, const T* dx, const int* tokens, int64_t rows, int64_t D) {
  constexpr int64_t W = vec::kLanes<T>;
  for (int64_t t = 0; t < rows; ++t) {
    T* d = demb + static_cast<int64_t>(tokens[t]) * D;
    for (int64_t c = 0; c < D; c += W) {
      const int64_t w = std::min(W, D - c);
      vec::store_n(d + c, vec::load_n(d + c, w) + vec::load_n(dx + t * D + c, w), w);
    }
  }
}

template <class T>
void tied_logits_forward(T* logits, const T* x, const T* embT, int64_t rows, int64_t D, int64_t V) {
  gemm_nn(rows, V, D, x, D, embT, V, logits, V, false);
}

template <class T>
void tied_logits_backward(T* dx, T* demb, const T* dlogits, const T* x, const T* emb, int64_t rows, int64_t D,
                          int64_t V) {
  gemm_nn(rows, D, V, dlogits, V, emb, D, dx, D, false);
  gemm_tn(V, D, rows, dlogits, V, x, D, demb, D, true);
}

template void embedding_forward<float>(float*, const float*, const int*, int64_t, int64_t);
template void embedding_forward<double>(double*, const double*, const int*, int64_t, int64_t);
template void embedding_backward<float>(float*, const float*, const int*, int64_t, int64_t);
template void embedding_backward<double>(double*, const double*, const int*, int64_t, int64_t);
template void tied_logits_forward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t);
template void tied_logits_forward<double>(double*, const double*, const double*, int64_t, int64_t, int64_t);
template void tied_logits_backward<float>(float*, float*, const float*, const float*, const float*, int64_t,
                                          int64_t, int64_t);
template void tied_logits_backward<double>(double*, double*, const double*, const double*, const double*,
                                           int64_t, int64_t, int64_t);

}  // namespace tinylm::kernels
