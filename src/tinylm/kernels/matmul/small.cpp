// kernels/matmul/small.h: an MR-row × NV-vector register tile of C stays in registers over a
// block of K; each k broadcasts MR values of A and loads the B vectors once. Columns are
// blocked outside rows so a B panel stays in L1 while every row block passes over it; K is
// blocked (256) so long products (the tied-embedding gradient, K = vocab) keep their B block
// in L2. Reloading a partial sum from C between K blocks is exact, so no blocking changes a
// result: the tile shape is chosen per level for its register file.
#include "tinylm/kernels/matmul/small.h"

#include <algorithm>

#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/small_reference.h"

TINYLM_LEVEL_BEGIN

namespace {

// Accumulators: 6 × 4 vectors fill 24 of AVX-512's 32 registers; with AVX2's 16, 6 rows × 1
// vector (12 ymm registers) is the usual tile; the generic level's SSE registers hold less.
// With fewer rows than a tile (a decoder's single row) the tile widens instead, so that
// several independent chains hide the FMA latency.
constexpr int kRowTile = TINYLM_LEVEL == TINYLM_LEVEL_GENERIC ? 3 : 6;
constexpr int kMaxVectors = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 4 : 1;
int max_vectors(int64_t M) {
  if (M >= kRowTile) return kMaxVectors;
  if (TINYLM_LEVEL == TINYLM_LEVEL_AVX512) return M == 1 ? 8 : 4;
  return M == 1 ? 4 : 2;
}
constexpr int64_t kKBlock = 256;

// One MR × NV-vector tile of C over k in [k0, k1). The last vector holds `last_w` lanes.
template <int MR, int NV, bool TransA>
void tile(int64_t k0, int64_t k1, const float* A, int64_t lda, const float* B, int64_t ldb,
          float* C, int64_t ldc, bool load_c, int64_t last_w) {
  // (Fully unrolled, so that the accumulators live in registers only.)
  f32x16 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const int64_t w = v == NV - 1 ? last_w : kLanes;
      acc[r][v] = load_c ? load_n(C + r * ldc + v * kLanes, w) : f32x16{};
    }
  }
  for (int64_t k = k0; k < k1; ++k) {
    const float* b = B + k * ldb;
    f32x16 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      bv[v] = v == NV - 1 ? load_n(b + v * kLanes, last_w) : load(b + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const f32x16 a = splat(TransA ? A[k * lda + r] : A[r * lda + k]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = fma(a, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      store_n(C + r * ldc + v * kLanes, acc[r][v], v == NV - 1 ? last_w : kLanes);
  }
}

// The last nr < M rows through tile<nr, NV, TransA>(args...).
template <int M, int NV, bool TransA, class... Args>
TINYLM_INLINE void tile_rest(int64_t nr, const Args&... args) {
  if constexpr (M > 1) {
    if (nr == M - 1) return tile<M - 1, NV, TransA>(args...);
    tile_rest<M - 1, NV, TransA>(nr, args...);
  }
}

// All row blocks of one column block [j0, j0 + NV vectors).
template <int NV, bool TransA>
void column_block(int64_t M, int64_t k0, int64_t k1, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float* C, int64_t ldc, bool load_c, int64_t last_w) {
  // Row i of A starts at A + i * (TransA ? 1 : lda).
  const int64_t a_row = TransA ? 1 : lda;
  int64_t i = 0;
  for (; i + kRowTile <= M; i += kRowTile) {
    tile<kRowTile, NV, TransA>(k0, k1, A + i * a_row, lda, B, ldb, C + i * ldc, ldc, load_c,
                               last_w);
  }
  tile_rest<kRowTile, NV, TransA>(M - i, k0, k1, A + i * a_row, lda, B, ldb, C + i * ldc, ldc,
                                  load_c, last_w);
}

template <bool TransA>
void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
          float* C, int64_t ldc, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    }
    return;
  }
  const int nv = max_vectors(M);
  for (int64_t k0 = 0; k0 < K; k0 += kKBlock) {
    const int64_t k1 = std::min(K, k0 + kKBlock);
    const bool load_c = accumulate || k0 > 0;
    for (int64_t j = 0; j < N;) {
      const int64_t left = N - j;
      if (nv >= 8 && left >= 8 * kLanes) {
        column_block<8, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c, kLanes);
        j += 8 * kLanes;
      } else if (nv >= 4 && left >= 4 * kLanes) {
        column_block<4, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c, kLanes);
        j += 4 * kLanes;
      } else if (nv >= 2 && left >= 2 * kLanes) {
        column_block<2, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c, kLanes);
        j += 2 * kLanes;
      } else {
        column_block<1, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c,
                                std::min(left, kLanes));
        j += kLanes;
      }
    }
  }
}

}  // namespace

void gemm_nn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
             int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  gemm<false>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
void gemm_tn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
             int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  gemm<true>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_SMALL_GEMM_ENTRIES(X)                                                           \
  X(void gemm_nn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, \
                 int64_t ldb, float* C, int64_t ldc, bool accumulate),                         \
    gemm_nn, (M, N, K, A, lda, B, ldb, C, ldc, accumulate))                                    \
  X(void gemm_tn(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, \
                 int64_t ldb, float* C, int64_t ldc, bool accumulate),                         \
    gemm_tn, (M, N, K, A, lda, B, ldb, C, ldc, accumulate))
TINYLM_PUBLIC_ENTRIES(TINYLM_SMALL_GEMM_ENTRIES)

void gemm_nn(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
             int64_t ldb, double* C, int64_t ldc, bool accumulate) {
  reference::small_gemm(false, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
void gemm_tn(int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
             int64_t ldb, double* C, int64_t ldc, bool accumulate) {
  reference::small_gemm(true, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

}  // namespace tinylm::kernels
#endif
