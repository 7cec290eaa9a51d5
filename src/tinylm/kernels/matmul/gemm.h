#pragma once
// General matrix products for training-sized problems (GPT-2's forward and backward
// products), row-major like CBLAS:
//   C[M×N] = alpha · op(A)[M×K] · op(B)[K×N] + beta · C
// op(X) is X or Xᵀ; lda/ldb/ldc are the row strides of the matrices as stored. Accumulation
// is in float. Threading lives inside (OpenMP, tinylm::set_num_threads; called inside a
// parallel region it runs on the calling thread). Same inputs give the same bytes on any
// number of threads (threads never split K; gemm.cpp says how). beta = 0 ignores C's prior contents
// (NaNs included), and alpha = 0 or K = 0 leave A and B unread, as BLAS does. Bad sizes or strides
// (ld < width) throw tinylm::Error. Backed by oneDNN (gemm.cpp says why), whose JIT kernels pick
// their own instructions: at the first product they are capped at the active level (TINYLM_ISA=avx2
// gives AVX2 products).
//
// Contract: tolerance. Results are held to PyTorch's within stated bounds, not to a fixed
// summation order; they are still the same bytes for the same inputs. double
// is the reference (a plain triple loop), for finite-difference checks.
#include <cstdint>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

enum class Trans : uint8_t { No, Yes };

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
          int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

// A and B in bf16, C in float.
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16* A,
          int64_t lda, const Bf16* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Whether bf16 products run natively (oneDNN's AVX-512 bf16 gemm). Without it the bf16 gemm
// above widens both operands to f32 on every call; callers that multiply bf16 values often do
// better rounding them into float buffers (cast.h's round_to_bf16) for the f32 gemm.
bool bf16_gemm_is_native();

}  // namespace tinylm::kernels
