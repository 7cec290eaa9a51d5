// kernels/small_gemm.h: a 6-row × (1, 2 or 4)-vector register tile of C stays in registers
// over a block of K; each k broadcasts six A values and loads the B vectors once. Columns
// are blocked outside rows so a B panel stays in L1 while every row block passes over it;
// K is blocked (256) so long products (the tied-embedding gradient, K = vocab) keep their B
// block in L2. Reloading a partial sum from C between K blocks is exact, so blocking does
// not change any result.
#include "tinylm/kernels/small_gemm.h"

#include <algorithm>

#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {
namespace {

using vec::kLanes;
using vec::Vec;

constexpr int kRowTile = 6;
constexpr int64_t kKBlock = 256;

// One MR × NV-vector tile of C over k in [k0, k1). The last vector holds `last_w` lanes.
template <class T, int MR, int NV, bool TransA>
void tile(int64_t k0, int64_t k1, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
          int64_t ldc, bool load_c, int64_t last_w) {
  constexpr int64_t W = kLanes<T>;
  Vec<T> acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int64_t w = v == NV - 1 ? last_w : W;
      acc[r][v] = load_c ? vec::load_n(C + r * ldc + v * W, w) : Vec<T>{};
    }
  }
  for (int64_t k = k0; k < k1; ++k) {
    const T* b = B + k * ldb;
    Vec<T> bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = vec::load_n(b + v * W, v == NV - 1 ? last_w : W);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const Vec<T> a = vec::splat(TransA ? A[k * lda + r] : A[r * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += a * bv[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vec::store_n(C + r * ldc + v * W, acc[r][v], v == NV - 1 ? last_w : W);
  }
}

// All row blocks of one column block [j0, j0 + NV vectors).
template <class T, int NV, bool TransA>
void column_block(int64_t M, int64_t k0, int64_t k1, const T* A, int64_t lda, const T* B, int64_t ldb,
                  T* C, int64_t ldc, bool load_c, int64_t last_w) {
  // Row i of A starts at A + i * (TransA ? 1 : lda).
  const int64_t a_row = TransA ? 1 : lda;
  int64_t i = 0;
  for (; i + kRowTile <= M; i += kRowTile) {
    tile<T, kRowTile, NV, TransA>(k0, k1, A + i * a_row, lda, B, ldb, C + i * ldc, ldc, load_c, last_w);
  }
  const T* a = A + i * a_row;
  T* c = C + i * ldc;
  switch (M - i) {
    case 5: tile<T, 5, NV, TransA>(k0, k1, a, lda, B, ldb, c, ldc, load_c, last_w); break;
    case 4: tile<T, 4, NV, TransA>(k0, k1, a, lda, B, ldb, c, ldc, load_c, last_w); break;
    case 3: tile<T, 3, NV, TransA>(k0, k1, a, lda, B, ldb, c, ldc, load_c, last_w); break;
    case 2: tile<T, 2, NV, TransA>(k0, k1, a, lda, B, ldb, c, ldc, load_c, last_w); break;
    case 1: tile<T, 1, NV, TransA>(k0, k1, a, lda, B, ldb, c, ldc, load_c, last_w); break;
    default: break;
  }
}

template <class T, bool TransA>
void gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
          int64_t ldc, bool accumulate) {
  constexpr int64_t W = kLanes<T>;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, T(0));
    }
    return;
  }
  for (int64_t k0 = 0; k0 < K; k0 += kKBlock) {
    const int64_t k1 = std::min(K, k0 + kKBlock);
    const bool load_c = accumulate || k0 > 0;
    for (int64_t j = 0; j < N;) {
      const int64_t left = N - j;
      if (left >= 4 * W) {
        column_block<T, 4, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c, W);
        j += 4 * W;
      } else if (left >= 2 * W) {
        column_block<T, 2, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c, W);
        j += 2 * W;
      } else {
        column_block<T, 1, TransA>(M, k0, k1, A, lda, B + j, ldb, C + j, ldc, load_c, std::min(left, W));
        j += W;
      }
    }
  }
}

}  // namespace

template <class T>
void gemm_nn(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
             T* C, int64_t ldc, bool accumulate) {
  gemm<T, false>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

template <class T>
void gemm_tn(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
             T* C, int64_t ldc, bool accumulate) {
  gemm<T, true>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

template void gemm_nn<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                             float*, int64_t, bool);
template void gemm_nn<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*,
                              int64_t, double*, int64_t, bool);
template void gemm_tn<float>(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                             float*, int64_t, bool);
template void gemm_tn<double>(int64_t, int64_t, int64_t, const double*, int64_t, const double*,
                              int64_t, double*, int64_t, bool);

}  // namespace tinylm::kernels
