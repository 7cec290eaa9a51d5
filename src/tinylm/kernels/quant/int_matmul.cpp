#include "tinylm/kernels/quant/int_matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/kernels/quant/prefetch.h"

TINYLM_LEVEL_BEGIN

namespace {

// The quantized activations of one row: q, its Q8_0 integers; d8, each block's scale as a float
// repeated 8 times (a pair of blocks' scales is one 16-lane load). Both are padded with zeros to
// an even count of blocks, so a last odd block pairs with a block that adds nothing.
struct Row {
  const int8_t* q;
  const float* d8;
};

// Q8Pair: a pair of blocks' weights, unpacked once for the rows of a tile: their integers in the
// form the level multiplies, and d, the two scales (lanes 0..7 and 8..15). pair_sums: float(P)
// of a pair against a row's blocks k, k + 1.
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2
// Q8_0: w, and |w| as unsigned bytes (w = -128 gives 128): |w| times x with w's sign, pairs of
// products within int16 (2 * 128 * 127), then pairs of pairs.
struct Q8Pair {
  __m256i w[2], a[2];
  f32x16 d;
};
TINYLM_INLINE f32x16 pair_scales(const uint8_t* d0, const uint8_t* d1, const float* table) {
  uint16_t h0, h1;
  std::memcpy(&h0, d0, 2);
  std::memcpy(&h1, d1, 2);
  return {_mm256_broadcast_ss(table + h0), _mm256_broadcast_ss(table + h1)};
}
TINYLM_INLINE Q8Pair unpack(const BlockQ8_0& b0, const BlockQ8_0& b1, const float* table) {
  Q8Pair p;
  p.w[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0.qs));
  p.w[1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1.qs));
  for (int h = 0; h < 2; ++h) p.a[h] = _mm256_sign_epi8(p.w[h], p.w[h]);
  p.d = pair_scales(b0.d, b1.d, table);
  return p;
}
TINYLM_INLINE __m256i quads(__m256i pairs) {
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}
TINYLM_INLINE __m256i load8(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
TINYLM_INLINE f32x16 pair_sums(const Q8Pair& p, Row x, int64_t k) {
  f32x16 r;
  const __m256i x0 = load8(x.q + k * kQuantBlock), x1 = load8(x.q + (k + 1) * kQuantBlock);
  r.lo = _mm256_cvtepi32_ps(quads(_mm256_maddubs_epi16(p.a[0], _mm256_sign_epi8(x0, p.w[0]))));
  r.hi = _mm256_cvtepi32_ps(quads(_mm256_maddubs_epi16(p.a[1], _mm256_sign_epi8(x1, p.w[1]))));
  return r;
}
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX512
// As at the AVX2 level, two blocks a register. AVX-512 has no byte sign: x is negated under a
// mask of w's negative bytes.
struct Q8Pair {
  __m512i a;
  __mmask64 negative;
  f32x16 d;
};
TINYLM_INLINE f32x16 pair_scales(const uint8_t* d0, const uint8_t* d1, const float* table) {
  uint16_t h0, h1;
  std::memcpy(&h0, d0, 2);
  std::memcpy(&h1, d1, 2);
  const __m512 lo = _mm512_maskz_broadcastss_ps(0x00ff, _mm_load_ss(table + h0));
  return {_mm512_mask_broadcastss_ps(lo, 0xff00, _mm_load_ss(table + h1))};
}
TINYLM_INLINE Q8Pair unpack(const BlockQ8_0& b0, const BlockQ8_0& b1, const float* table) {
  const __m512i w = _mm512_mask_broadcast_i64x4(
      _mm512_maskz_broadcast_i64x4(0x0f,
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0.qs))),
      0xf0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1.qs)));
  return {_mm512_abs_epi8(w), _mm512_movepi8_mask(w), pair_scales(b0.d, b1.d, table)};
}
TINYLM_INLINE f32x16 to_float(__m512i pairs) {
  return {_mm512_maskz_cvtepi32_ps(kAll16, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)))};
}
TINYLM_INLINE f32x16 pair_sums(const Q8Pair& p, Row x, int64_t k) {
  const __m512i xv = _mm512_loadu_si512(x.q + k * kQuantBlock);
  const __m512i sx = _mm512_mask_sub_epi8(xv, p.negative, _mm512_setzero_si512(), xv);
  return to_float(_mm512_maddubs_epi16(p.a, sx));
}
#else
// The integers and scales as plain arrays.
struct Q8Pair {
  int q[2 * kQuantBlock];
  float d[2];
};
TINYLM_INLINE Q8Pair unpack(const BlockQ8_0& b0, const BlockQ8_0& b1, const float* table) {
  Q8Pair p;
  const BlockQ8_0* b[2] = {&b0, &b1};
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < kQuantBlock; ++j) p.q[h * kQuantBlock + j] = b[h]->qs[j];
    p.d[h] = table[b[h]->d[0] | (b[h]->d[1] << 8)];
  }
  return p;
}
TINYLM_INLINE f32x16 pair_sums(const Q8Pair& p, Row x, int64_t k) {
  float f[16];
  for (int l = 0; l < 16; ++l) {
    int sum = 0;
    for (int j = 4 * l; j < 4 * l + 4; ++j) sum += p.q[j] * x.q[k * kQuantBlock + j];
    f[l] = static_cast<float>(sum);
  }
  return load(f);
}
TINYLM_INLINE f32x16 pair_scales(const Q8Pair& p) {
  float f[16];
  for (int l = 0; l < 16; ++l) f[l] = p.d[l / 8];
  return load(f);
}
#endif

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512 || TINYLM_LEVEL == TINYLM_LEVEL_AVX2
TINYLM_INLINE f32x16 pair_scales(const Q8Pair& p) { return p.d; }
#endif

// A register tile: rows x[0 .. NR - 1] by outputs o0 .. o0 + NO - 1, each pair of blocks'
// weights unpacked once for the rows and each row's activations loaded once for the outputs.
// w: the first output's row of blocks; nb blocks a row; y: row r's outputs at y + r * ldy.
template <int NR, int NO, class Block>
TINYLM_INLINE void tile(float* y, int64_t ldy, const Row* x, const Block* w, int64_t nb,
                        const float* b, const float* table) {
  f32x16 a[NR][NO];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 4
    for (int o = 0; o < NO; ++o) a[r][o] = f32x16{};
  }
  for (int64_t k = 0; k < nb; k += 2) {
    const int64_t k1 = k + 1 < nb ? k + 1 : k;  // (an odd last block pairs with itself, times 0)
    f32x16 dx[NR];
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) dx[r] = load(x[r].d8 + k * 8);
#pragma GCC unroll 4
    for (int o = 0; o < NO; ++o) {
      const Block* wo = w + o * nb;
      prefetch_piece(wo + k, 0);
      prefetch_piece(wo + k1, 0);
      const auto p = unpack(wo[k], wo[k1], table);
      const f32x16 dw = pair_scales(p);
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) a[r][o] = fma(pair_sums(p, x[r], k), dw * dx[r], a[r][o]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int o = 0; o < NO; ++o) y[r * ldy + o] = hsum(a[r][o]) + (b ? b[o] : 0.0f);
  }
}

// The prefill's register tile (rows x outputs): 4 x 4 on AVX-512 (16 accumulators), 2 x 2 on
// AVX2 (each accumulator two registers); decode, one row, takes 1 x 4 at every level.
constexpr int kTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 4
                          : TINYLM_LEVEL == TINYLM_LEVEL_AVX2 ? 2
                                                              : 1;
constexpr int kTileOuts = TINYLM_LEVEL == TINYLM_LEVEL_AVX2 ? 2 : 4;

// Items of (a block of rows) x (a group of outputs), as the f32-activation prefill: a thread's
// four outputs' blocks stay in L1 while the rows pass over them (for one row, decode, the items
// are the groups).
void product(float* y, const int8_t* q, const float* d8, const BlockQ8_0* w, const float* b,
             int64_t rows, int64_t nin, int64_t nout) {
  constexpr int64_t kOuts = 4, kGroup = 64, kRowBlock = 64;
  const int64_t nb = nin / kQuantBlock, ldq = (nb + 1) / 2 * 2 * kQuantBlock,
                ldd = ldq / 4;  // (Row's arrays, padded to pairs)
  const int64_t ngroups = (nout + kGroup - 1) / kGroup;
  const float* table = f16_table();
  const auto row = [=](int64_t r) { return Row{q + r * ldq, d8 + r * ldd}; };
  parallel_for_balanced((rows + kRowBlock - 1) / kRowBlock * ngroups, [&](int64_t item) {
    const int64_t o0 = item % ngroups * kGroup, o1 = std::min(nout, o0 + kGroup);
    const int64_t r0 = item / ngroups * kRowBlock, r1 = std::min(rows, r0 + kRowBlock);
    for (int64_t s = o0; s < o1; s += kOuts) {
      const int64_t n = std::min(kOuts, o1 - s);
      const float* bs = b ? b + s : nullptr;
      int64_t r = r0;
      if (n == kOuts) {
        for (; r + kTileRows <= r1; r += kTileRows) {
          Row xs[kTileRows];
          for (int i = 0; i < kTileRows; ++i) xs[i] = row(r + i);
          for (int64_t o = 0; o < kOuts; o += kTileOuts) {
            tile<kTileRows, kTileOuts>(y + r * nout + s + o, nout, xs, w + (s + o) * nb, nb,
                                       bs ? bs + o : nullptr, table);
          }
        }
        for (; r < r1; ++r) {
          const Row x = row(r);
          tile<1, kOuts>(y + r * nout + s, nout, &x, w + s * nb, nb, bs, table);
        }
        continue;
      }
      for (; r < r1; ++r) {
        const Row x = row(r);
        for (int64_t o = 0; o < n; ++o) {
          tile<1, 1>(y + r * nout + s + o, nout, &x, w + (s + o) * nb, nb, bs ? bs + o : nullptr,
                     table);
        }
      }
    }
  });
}

}  // namespace

void quant_matmul_int8(float* y, const int8_t* q, const float* d8, const BlockQ8_0* w,
                       const float* b, int64_t rows, int64_t nin, int64_t nout) {
  product(y, q, d8, w, b, rows, nin, nout);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

TINYLM_LEVELS(void quant_matmul_int8(float* y, const int8_t* q, const float* d8, const BlockQ8_0* w,
                                     const float* b, int64_t rows, int64_t nin, int64_t nout);
              void quant_matmul_int8_q4(float* y, const int8_t* q, const float* dx,
                                        const int32_t* sx, const BlockQ4_0x16* w, const float* b,
                                        int64_t rows, int64_t nin, int64_t nout))

namespace {
constexpr int64_t kGroup = 16;  // outputs of a BlockQ4_0x16

void check_inputs(const char* what, int64_t nin) {
  check(nin > 0 && nin % kQuantBlock == 0, "[", what, "] ", nin,
        " inputs: the inputs must be a positive multiple of 32 (one block)");
}
}  // namespace

size_t q4_0x16_bytes(int64_t nin, int64_t nout) {
  check_inputs("q4_0x16_bytes", nin);
  check(nout >= 0, "[q4_0x16_bytes] ", nout, " outputs");
  return static_cast<size_t>((nout + kGroup - 1) / kGroup * (nin / kQuantBlock)) *
         sizeof(BlockQ4_0x16);
}

void pack_q4_0x16(void* out, const void* w, int64_t nin, int64_t nout) {
  const int64_t nb = nin / kQuantBlock, ngroups = (nout + kGroup - 1) / kGroup;
  std::memset(out, 0, q4_0x16_bytes(nin, nout));
  auto* packed = static_cast<BlockQ4_0x16*>(out);
  const auto* blocks = static_cast<const BlockQ4_0*>(w);
  parallel_for(0, ngroups, grain_for(nb * kGroup * 18), [&](int64_t g) {
    for (int64_t o = g * kGroup; o < std::min(nout, (g + 1) * kGroup); ++o) {
      const int lane = static_cast<int>(o % kGroup);
      for (int64_t k = 0; k < nb; ++k) {
        const BlockQ4_0& src = blocks[o * nb + k];
        BlockQ4_0x16& dst = packed[g * nb + k];
        std::memcpy(dst.d[lane], src.d, 2);
        for (int s = 0; s < 4; ++s) std::memcpy(dst.qs[s] + 4 * lane, src.qs + 4 * s, 4);
      }
    }
  });
}

void quant_matmul_int8(DType t, float* y, const float* x, const void* w, const float* b,
                       int64_t rows, int64_t nin, int64_t nout) {
  check(t == DType::q8_0 || t == DType::q4_0, "[quant_matmul_int8] ", dtype_name(t),
        " weights: 8-bit activations meet q8_0 or q4_0 blocks");
  check(rows >= 0 && nout >= 0, "[quant_matmul_int8] ", rows, " rows to ", nout, " outputs");
  check_inputs("quant_matmul_int8", nin);
  if (rows == 0) return;
  const int64_t nb = nin / kQuantBlock;
  thread_local std::vector<BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(rows * nb));
  quantize_q8_0(x, blocks.data(), rows * nin);
  const float* table = f16_table();
  const auto scale = [&](const BlockQ8_0& blk) { return table[blk.d[0] | (blk.d[1] << 8)]; };
  thread_local AlignedVector<int8_t> q;
  if (t == DType::q4_0) {
    // The integers, each block's scale and 8 times its sum.
    thread_local AlignedVector<float> dx;
    thread_local AlignedVector<int32_t> sx;
    q.resize(static_cast<size_t>(rows * nin));
    dx.resize(static_cast<size_t>(rows * nb));
    sx.resize(static_cast<size_t>(rows * nb));
    for (size_t i = 0; i < blocks.size(); ++i) {
      std::copy_n(blocks[i].qs, kQuantBlock, q.data() + i * kQuantBlock);
      dx[i] = scale(blocks[i]);
      int32_t sum = 0;
      for (int8_t v : blocks[i].qs) sum += v;
      sx[i] = 8 * sum;
    }
    TINYLM_DISPATCH(quant_matmul_int8_q4, y, q.data(), dx.data(), sx.data(),
                    static_cast<const BlockQ4_0x16*>(w), b, rows, nin, nout);
  }
  // Q8_0: the integers and scales unpacked into the kernels' Row layout, padded to pairs.
  const int64_t padded = (nb + 1) / 2 * 2;
  thread_local AlignedVector<float> d8;
  q.assign(static_cast<size_t>(rows * padded * kQuantBlock), 0);
  d8.assign(static_cast<size_t>(rows * padded * 8), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < nb; ++k) {
      const BlockQ8_0& blk = blocks[static_cast<size_t>(r * nb + k)];
      const int64_t at = r * padded + k;
      std::copy_n(blk.qs, kQuantBlock, q.data() + at * kQuantBlock);
      std::fill_n(d8.data() + at * 8, 8, scale(blk));
    }
  }
  TINYLM_DISPATCH(quant_matmul_int8, y, q.data(), d8.data(), static_cast<const BlockQ8_0*>(w), b,
                  rows, nin, nout);
}

}  // namespace tinylm::kernels
#endif
