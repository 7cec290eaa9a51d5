#include "tinylm/kernels/mixer/ffn.h"

#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/cpu/level.h"
#include "tinylm/kernels/matmul/small.h"

// Composed of dispatching kernels: compiled in the generic pass only.
#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

template <class T>
void ffn_forward(T* y, T* h, T* a, const T* x, const T* upT, const T* downT, int64_t n, int64_t D,
                 int64_t H) {
  gemm_nn(n, H, D, x, D, upT, H, h, H, false);
  gelu_forward(a, h, n * H);
  gemm_nn(n, D, H, a, H, downT, D, y, D, false);
}

template <class T>
void ffn_backward(T* dx, T* dup, T* ddown, T* scratch, const T* dy, const T* x, const T* h,
                  const T* a, const T* up, const T* down, int64_t n, int64_t D, int64_t H) {
  if (n == 0) return;
  T* dh = scratch;
  gemm_nn(n, H, D, dy, D, down, H, dh, H, false);  // da = dy · W_down
  gemm_tn(D, H, n, dy, D, a, H, ddown, H, true);   // dW_down += dyᵀ · a
  gelu_backward(dh, dh, h, n * H);                 // dh = da ⊙ gelu'(h)
  gemm_tn(H, D, n, dh, H, x, D, dup, D, true);     // dW_up += dhᵀ · x
  gemm_nn(n, D, H, dh, H, up, D, dx, D, false);    // dx = dh · W_up
}

template void ffn_forward<float>(float*, float*, float*, const float*, const float*, const float*,
                                 int64_t, int64_t, int64_t);
template void ffn_forward<double>(double*, double*, double*, const double*, const double*,
                                  const double*, int64_t, int64_t, int64_t);
template void ffn_backward<float>(float*, float*, float*, float*, const float*, const float*,
                                  const float*, const float*, const float*, const float*, int64_t,
                                  int64_t, int64_t);
template void ffn_backward<double>(double*, double*, double*, double*, const double*, const double*,
                                   const double*, const double*, const double*, const double*,
                                   int64_t, int64_t, int64_t);

}  // namespace tinylm::kernels
#endif
