#include "tinylm/kernels/linear_train.h"

#include <algorithm>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

template <class T>
void gemm_t(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
            const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const T a = ta == Trans::No ? A[i * lda + k] : A[k * lda + i];
          const T b = tb == Trans::No ? B[k * ldb + j] : B[j * ldb + k];
          acc += a * b;
        }
        C[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * C[i * ldc + j]);
      }
    }
  }
}

template <class T>
void add_bias(T* y, const T* b, int64_t rows, int64_t n) {
  parallel_for(0, rows, simd::grain_for(n), [&](int64_t r) {
    T* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) yr[i] += b[i];
  });
}

template <class T>
void bias_backward(T* db, const T* dy, int64_t rows, int64_t n) {
  constexpr int64_t kBlock = 256;
  parallel_for(0, (n + kBlock - 1) / kBlock, simd::grain_for(rows * kBlock), [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(n, c0 + kBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const T* g = dy + r * n;
      for (int64_t i = c0; i < c1; ++i) db[i] += g[i];
    }
  });
}

template <class T>
void conv1d_forward(T* y, const T* x, const T* w, const T* b, int64_t rows, int64_t nin,
                    int64_t nout) {
  gemm_t<T>(Trans::No, Trans::No, rows, nout, nin, T(1), x, nin, w, nout, T(0), y, nout);
  if (b) add_bias(y, b, rows, nout);
}

template <class T>
void conv1d_backward(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w, int64_t rows,
                     int64_t nin, int64_t nout) {
  if (dx) gemm_t<T>(Trans::No, Trans::Yes, rows, nin, nout, T(1), dy, nout, w, nout, T(0), dx, nin);
  gemm_t<T>(Trans::Yes, Trans::No, nin, nout, rows, T(1), x, nin, dy, nout, T(1), dw, nout);
  if (db) bias_backward(db, dy, rows, nout);
}

#define TINYLM_INSTANTIATE(T)                                                                    \
  template void gemm_t<T>(Trans, Trans, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, \
                          int64_t, T, T*, int64_t);                                              \
  template void add_bias<T>(T*, const T*, int64_t, int64_t);                                     \
  template void bias_backward<T>(T*, const T*, int64_t, int64_t);                                \
  template void conv1d_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);  \
  template void conv1d_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t,   \
                                   int64_t);
TINYLM_INSTANTIATE(float)
TINYLM_INSTANTIATE(double)
#undef TINYLM_INSTANTIATE

}  // namespace tinylm::kernels
