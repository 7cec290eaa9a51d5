// Portable reference implementation of kernels/gemm.h: rows of C split across threads, the
// inner loop over N contiguous so it vectorizes. To be replaced by a blocked kernel.
#include "tinylm/kernels/gemm.h"

#include "tinylm/core/parallel.h"

namespace tinylm::kernels {
namespace {

template <class T>
void gemm_ref(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda,
              const T* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  parallel_for(0, M, 4, [&](int64_t i) {
    {
      float* c = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
      for (int64_t k = 0; k < K; ++k) {
        const float a = alpha * to_float(ta == Trans::No ? A[i * lda + k] : A[k * lda + i]);
        if (tb == Trans::No) {
          const T* b = B + k * ldb;
          for (int64_t j = 0; j < N; ++j) c[j] += a * to_float(b[j]);
        } else {
          for (int64_t j = 0; j < N; ++j) c[j] += a * to_float(B[j * ldb + k]);
        }
      }
    }
  });
}

}  // namespace

void gemm_f32(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16* A,
               int64_t lda, const Bf16* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace tinylm::kernels
