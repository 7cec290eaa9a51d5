#pragma once
// Register-tiled matrix products for the small matrices of EvermindLM (64×128 experts,
// 64-wide embeddings), row-major, single-threaded (callers parallelize over sequences):
//
//   gemm_nn:  C[M×N] = (accumulate ? C : 0) + A[M×K] · B[K×N]
//   gemm_tn:  C[M×N] = (accumulate ? C : 0) + Aᵀ · B,   A stored as [K×M]
//
// lda/ldb/ldc are row strides in elements. A linear layer y = W x with W [out×in] needs
// Wᵀ in the forward (pass a transposed copy as B), W itself for the input gradient
// (gemm_nn with B = W) and gemm_tn for the weight gradient (dW += dYᵀ X).
//
// Every C[i][j] is one chain of fused multiply-adds over k = 0..K-1 in order, starting from
// 0 or from C[i][j]: the result does not depend on M, on the row's place in the matrix, on
// the thread count or on the blocking, so one row computed alone equals the same row
// computed in a batch, bit for bit.
#include <cstdint>

namespace tinylm::kernels {

template <class T>
void gemm_nn(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
             T* C, int64_t ldc, bool accumulate);

template <class T>
void gemm_tn(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
             T* C, int64_t ldc, bool accumulate);

}  // namespace tinylm::kernels
