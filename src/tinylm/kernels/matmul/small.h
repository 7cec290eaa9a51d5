#pragma once
// Register-tiled products for small matrices (EvermindLM's 64×128 experts, 64-wide
// embeddings, the 4096-word tied head), row-major, single-threaded (callers parallelize over
// sequences):
//
//   gemm_nn:  C[M×N] = (accumulate ? C : 0) + A[M×K] · B[K×N]
//   gemm_tn:  C[M×N] = (accumulate ? C : 0) + Aᵀ · B,   A stored as [K×M]
//
// lda/ldb/ldc are row strides in elements. A linear layer y = W x with W [out×in] needs Wᵀ in
// the forward (pass a transposed copy as B), W itself for the input gradient (gemm_nn with
// B = W) and gemm_tn for the weight gradient (dW += dYᵀ X).
//
// Contract: single chain. Every C[i][j] is one chain of fused multiply-adds over k = 0..K-1 in
// order, starting from 0 or from C[i][j]. The result does not depend on M, on the row's place,
// on the blocking (which differs between levels), on the thread count or on the level: one
// row alone equals the same row inside a batch, bit for bit. double is the reference (the
// same chain, std::fma), for finite-difference checks.
#include <cstdint>

namespace tinylm::kernels {

void gemm_nn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
             int64_t ldb, float* C, int64_t ldc, bool accumulate);
void gemm_nn(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
             int64_t ldb, double* C, int64_t ldc, bool accumulate);

void gemm_tn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
             int64_t ldb, float* C, int64_t ldc, bool accumulate);
void gemm_tn(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
             int64_t ldb, double* C, int64_t ldc, bool accumulate);

}  // namespace tinylm::kernels
