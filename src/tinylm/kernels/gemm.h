#pragma once
// General matrix products for training-sized problems (the large prefill and backward
// products), row-major like CBLAS:
//   C[M×N] = alpha · op(A)[M×K] · op(B)[K×N] + beta · C
// op(X) is X or Xᵀ; lda/ldb/ldc are the row strides of the matrices as stored. Accumulation
// is in float. Threading lives inside (OpenMP, tinylm::set_num_threads; called inside a
// parallel region it runs on the calling thread). Same inputs and thread count give the same
// bytes. beta = 0 ignores C's prior contents (NaNs included), and alpha = 0 or K = 0 leave A
// and B unread, as BLAS does. Bad sizes or strides (ld < width) throw tinylm::Error.
// Backed by oneDNN (gemm.cpp says why).
#include <cstdint>

#include "tinylm/kernels/half.h"

namespace tinylm::kernels {

enum class Trans : uint8_t { No, Yes };

void gemm_f32(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
              int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// A and B in bf16, C in float.
void gemm_bf16(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const Bf16* A,
               int64_t lda, const Bf16* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace tinylm::kernels
