#include "tinylm/kernels/position_embedding.h"

#include <algorithm>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

template <class T>
void token_position_embedding_forward(T* x, const int32_t* tokens, const T* wte, const T* wpe, int64_t B,
                       int64_t Tn, int64_t C) {
  parallel_for(0, B * Tn, simd::grain_for(C), [&](int64_t r) {
    const T* e = wte + static_cast<int64_t>(tokens[r]) * C;
    const T* p = wpe + (r % Tn) * C;
    T* xr = x + r * C;
    for (int64_t i = 0; i < C; ++i) xr[i] = e[i] + p[i];
  });
}

template <class T>
void token_position_embedding_backward(T* dwte, T* dwpe, const T* dx, const int32_t* tokens, int64_t B,
                        int64_t Tn, int64_t C) {
  constexpr int64_t kBlock = 64;
  parallel_for(0, (C + kBlock - 1) / kBlock, simd::grain_for(2 * B * Tn * kBlock), [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int64_t r = 0; r < B * Tn; ++r) {
      const T* g = dx + r * C;
      T* e = dwte + static_cast<int64_t>(tokens[r]) * C;
      T* p = dwpe + (r % Tn) * C;
      for (int64_t i = c0; i < c1; ++i) {
        e[i] += g[i];
        p[i] += g[i];
      }
    }
  });
}

template void token_position_embedding_forward<float>(float*, const int32_t*, const float*, const float*, int64_t,
                                       int64_t, int64_t);
template void token_position_embedding_forward<double>(double*, const int32_t*, const double*, const double*,
                                        int64_t, int64_t, int64_t);
template void token_position_embedding_backward<float>(float*, float*, const float*, const int32_t*, int64_t,
                                        int64_t, int64_t);
template void token_position_embedding_backward<double>(double*, double*, const double*, const int32_t*, int64_t,
                                         int64_t, int64_t);

}  // namespace tinylm::kernels
