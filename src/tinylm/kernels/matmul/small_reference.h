#pragma once
// kernels/matmul/small.h as plain loops: each C[i][j] one fused multiply-add chain over k.
#include <cmath>
#include <cstdint>

namespace tinylm::kernels::reference {

// C = (accumulate ? C : 0) + op(A) B with op(A) = A, or Aᵀ (A stored [K×M]) when trans_a.
template <class T>
void small_gemm(bool trans_a, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                int64_t ldb, T* C, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      T acc = accumulate ? C[i * ldc + j] : T(0);
      for (int64_t k = 0; k < K; ++k)
        acc = std::fma(trans_a ? A[k * lda + i] : A[i * lda + k], B[k * ldb + j], acc);
      C[i * ldc + j] = acc;
    }
  }
}

}  // namespace tinylm::kernels::reference
