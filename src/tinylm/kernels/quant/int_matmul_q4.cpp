// The Q4_0 product with 8-bit activations over the packed layout (int_matmul.h states the layout
// and the contract): each lane of a register is one output, so a block's 32 products are summed
// as integers in that lane and only then converted and scaled, once for 16 outputs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/kernels/quant/int_matmul.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

constexpr int kGroup = 16;  // outputs a packed block holds

// One row's activations: q, its Q8_0 integers (32 a block); dx, each block's scale; sx, 8 times
// each block's sum of q (Q4_0's offset: (n - 8) x = n x - 8 x).
struct Row {
  const int8_t* q;
  const float* dx;
  const int32_t* sx;
};

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2 || TINYLM_LEVEL == TINYLM_LEVEL_AVX512
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2
// Two registers of 8 outputs ("parts") cover a packed block's 16.
using VI = __m256i;
using VF = __m256;
constexpr int kParts = 2;
TINYLM_INLINE VI load_q(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const VI*>(p)); }
TINYLM_INLINE VI splat4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
TINYLM_INLINE VI splat(int32_t v) { return _mm256_set1_epi32(v); }
TINYLM_INLINE VI zero_i() { return _mm256_setzero_si256(); }
TINYLM_INLINE VI low_nibbles(VI q) { return _mm256_and_si256(q, _mm256_set1_epi8(15)); }
TINYLM_INLINE VI high_nibbles(VI q) {
  return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(15));
}
TINYLM_INLINE VI add16(VI a, VI b) { return _mm256_add_epi16(a, b); }
TINYLM_INLINE VI dot_pairs(VI n, VI x) { return _mm256_maddubs_epi16(n, x); }
TINYLM_INLINE VF block_sums(VI acc, VI offset) {
  return _mm256_cvtepi32_ps(
      _mm256_sub_epi32(_mm256_madd_epi16(acc, _mm256_set1_epi16(1)), offset));
}
TINYLM_INLINE VF scales(const uint8_t* d) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
}
TINYLM_INLINE VF splat_f(float v) { return _mm256_set1_ps(v); }
TINYLM_INLINE VF zero_f() { return _mm256_setzero_ps(); }
TINYLM_INLINE VF mul(VF a, VF b) { return _mm256_mul_ps(a, b); }
TINYLM_INLINE VF fma_f(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
TINYLM_INLINE void store_f(float* p, VF v) { _mm256_storeu_ps(p, v); }
#else
using VI = __m512i;
using VF = __m512;
constexpr int kParts = 1;
TINYLM_INLINE VI load_q(const uint8_t* p) { return _mm512_loadu_si512(p); }
TINYLM_INLINE VI splat4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}
TINYLM_INLINE VI splat(int32_t v) { return _mm512_set1_epi32(v); }
TINYLM_INLINE VI zero_i() { return _mm512_setzero_si512(); }
TINYLM_INLINE VI low_nibbles(VI q) { return _mm512_and_si512(q, _mm512_set1_epi8(15)); }
TINYLM_INLINE VI high_nibbles(VI q) {
  return _mm512_and_si512(_mm512_srli_epi16(q, 4), _mm512_set1_epi8(15));
}
TINYLM_INLINE VI add16(VI a, VI b) { return _mm512_add_epi16(a, b); }
TINYLM_INLINE VI dot_pairs(VI n, VI x) { return _mm512_maddubs_epi16(n, x); }
TINYLM_INLINE VF block_sums(VI acc, VI offset) {
  return _mm512_maskz_cvtepi32_ps(
      kAll16, _mm512_sub_epi32(_mm512_madd_epi16(acc, _mm512_set1_epi16(1)), offset));
}
TINYLM_INLINE VF scales(const uint8_t* d) {
  return _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d)));
}
TINYLM_INLINE VF splat_f(float v) { return _mm512_set1_ps(v); }
TINYLM_INLINE VF zero_f() { return _mm512_setzero_ps(); }
TINYLM_INLINE VF mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
TINYLM_INLINE VF fma_f(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
TINYLM_INLINE void store_f(float* p, VF v) { _mm512_storeu_ps(p, v); }
#endif
constexpr int kPartOuts = kGroup / kParts;

// Rows x[0 .. NR - 1] against parts p0 .. p0 + NP - 1 of one group (w: its nb packed blocks).
// The int16 sums cannot overflow: 16 products of a nibble (<= 15) and |q| <= 127 a lane.
template <int NR, int NP>
TINYLM_INLINE void tile(float* out, const Row* x, const BlockQ4_0x16* w, int64_t nb, int p0) {
  VF chain[NR][NP];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) chain[r][p] = zero_f();
  }
  for (int64_t k = 0; k < nb; ++k) {
    const BlockQ4_0x16& blk = w[k];
    for (int line = 0; line < 5; ++line)
      __builtin_prefetch(reinterpret_cast<const char*>(&blk) + 4096 + 64 * line, 0, 2);
    VI acc[NR][NP];
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) acc[r][p] = zero_i();
    }
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) {
        const VI q = load_q(blk.qs[s] + (p0 + p) * kPartOuts * 4);
        const VI lo = low_nibbles(q), hi = high_nibbles(q);
#pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) {
          const int8_t* xq = x[r].q + k * kQuantBlock + 4 * s;
          acc[r][p] = add16(acc[r][p], add16(dot_pairs(lo, splat4(xq)), dot_pairs(hi, splat4(xq + 16))));
        }
      }
    }
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) {
      const VF dw = scales(blk.d[(p0 + p) * kPartOuts]);
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        chain[r][p] = fma_f(block_sums(acc[r][p], splat(x[r].sx[k])), mul(dw, splat_f(x[r].dx[k])),
                            chain[r][p]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int p = 0; p < NP; ++p) store_f(out + r * kGroup + (p0 + p) * kPartOuts, chain[r][p]);
  }
}

// Decode takes both parts of a group at once (a row's activations loaded once); a tile of rows
// takes them one part at a time, to keep its registers.
constexpr int kTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 8 : 4;
TINYLM_INLINE void group(float* out, const Row* x, int64_t nrows, const BlockQ4_0x16* w,
                         int64_t nb) {
  int64_t r = 0;
  for (; r + kTileRows <= nrows; r += kTileRows) {
    for (int p = 0; p < kParts; ++p) tile<kTileRows, 1>(out + r * kGroup, x + r, w, nb, p);
  }
  for (; r < nrows; ++r) tile<1, kParts>(out + r * kGroup, x + r, w, nb, 0);
}
#else
// The contract's loops, lane by lane.
TINYLM_INLINE void group(float* out, const Row* x, int64_t nrows, const BlockQ4_0x16* w,
                         int64_t nb) {
  const float* table = f16_table();
  for (int64_t r = 0; r < nrows; ++r) {
    for (int o = 0; o < kGroup; ++o) {
      float chain = 0.0f;
      for (int64_t k = 0; k < nb; ++k) {
        const BlockQ4_0x16& blk = w[k];
        const int8_t* xq = x[r].q + k * kQuantBlock;
        int32_t sum = 0;
        for (int j = 0; j < kQuantBlock / 2; ++j) {
          const uint8_t byte = blk.qs[j / 4][o * 4 + j % 4];
          sum += (byte & 15) * xq[j] + (byte >> 4) * xq[j + 16];
        }
        const float dw = table[blk.d[o][0] | (blk.d[o][1] << 8)];
        chain = std::fma(static_cast<float>(sum - x[r].sx[k]), dw * x[r].dx[k], chain);
      }
      out[r * kGroup + o] = chain;
    }
  }
}
#endif

}  // namespace

// Items of (a block of rows) x (a few groups), as the other products: a thread's groups' blocks
// stay in cache while its rows pass over them.
void quant_matmul_int8_q4(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                          const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                          int64_t nout) {
  constexpr int64_t kGroupsPerItem = 4, kRowBlock = 64;
  const int64_t nb = nin / kQuantBlock, ngroups = (nout + kGroup - 1) / kGroup;
  const int64_t nitems = (ngroups + kGroupsPerItem - 1) / kGroupsPerItem;
  parallel_for_balanced((rows + kRowBlock - 1) / kRowBlock * nitems, [&](int64_t item) {
    const int64_t g0 = item % nitems * kGroupsPerItem, g1 = std::min(ngroups, g0 + kGroupsPerItem);
    const int64_t r0 = item / nitems * kRowBlock, r1 = std::min(rows, r0 + kRowBlock);
    Row xs[kRowBlock];
    for (int64_t r = r0; r < r1; ++r)
      xs[r - r0] = {q + r * nin, dx + r * nb, sx + r * nb};
    alignas(64) float out[kRowBlock * kGroup];
    for (int64_t g = g0; g < g1; ++g) {
      group(out, xs, r1 - r0, w + g * nb, nb);
      const int64_t o0 = g * kGroup, n = std::min<int64_t>(kGroup, nout - o0);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t o = 0; o < n; ++o)
          y[r * nout + o0 + o] = out[(r - r0) * kGroup + o] + (b ? b[o0 + o] : 0.0f);
      }
    }
  });
}

TINYLM_LEVEL_END
