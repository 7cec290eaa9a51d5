#include "tinylm/kernels/quant/int_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/matmul/tile_sums.h"
#include "tinylm/kernels/quant/blocks.h"

TINYLM_LEVEL_BEGIN

#include "tinylm/kernels/matmul/stream_driver.h"

namespace {

// One row's activations: q, its Q8_0 integers (32 a block); dx, each block's scale; sx, 8 times
// each block's sum of q (for Q4_0's offset: (n - 8) x = n x - 8 x).
struct Row {
  const int8_t* q;
  const float* dx;
  const int32_t* sx;
};

// Weight j's integer in ggml's block.
TINYLM_INLINE int weight(const BlockQ8_0& b, int j) { return b.qs[j]; }
TINYLM_INLINE int weight(const BlockQ4_0& b, int j) {
  return (j < 16 ? b.qs[j] & 15 : b.qs[j - 16] >> 4) - 8;
}

// The contract's chain for one output, by plain loops: block(k, P, dw) gives block k's integer
// sum against the row and the weights' scale.
template <class Block>
TINYLM_INLINE float chain(const Row& x, int64_t nb, const Block& block) {
  float c = 0.0f;
  for (int64_t k = 0; k < nb; ++k) {
    int32_t p = 0;
    float dw = 0.0f;
    block(k, p, dw);
    c = std::fma(static_cast<float>(p), dw * x.dx[k], c);
  }
  return c;
}

// The last nout % 16 outputs, still ggml's rows: the plain loops at every level.
template <class Block>
float tail_output(const Row& x, const Block* row, int64_t nb, const float* table) {
  return chain(x, nb, [&](int64_t k, int32_t& p, float& dw) {
    for (int j = 0; j < kQuantBlock; ++j) p += weight(row[k], j) * x.q[k * kQuantBlock + j];
    dw = table[row[k].d[0] | (row[k].d[1] << 8)];
  });
}

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2 || TINYLM_LEVEL == TINYLM_LEVEL_AVX512
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX2
// Two registers of 8 outputs ("parts") cover a packed block's 16.
using VI = __m256i;
using VF = __m256;
constexpr int kParts = 2;
#define TINYLM_MM(op) _mm256_##op          // an operation at this width
#define TINYLM_SI(op) _mm256_##op##_si256  // a whole-register integer operation
TINYLM_INLINE VI abs8(VI w) { return _mm256_sign_epi8(w, w); }
TINYLM_INLINE VI sign8(VI x, VI w) { return _mm256_sign_epi8(x, w); }  // x with w's sign
TINYLM_INLINE VF to_float(VI a) { return _mm256_cvtepi32_ps(a); }
TINYLM_INLINE VF scales(const uint8_t* d) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
}
#else
using VI = __m512i;
using VF = __m512;
constexpr int kParts = 1;
#define TINYLM_MM(op) _mm512_##op
#define TINYLM_SI(op) _mm512_##op##_si512
TINYLM_INLINE VI abs8(VI w) { return _mm512_abs_epi8(w); }
TINYLM_INLINE VI sign8(VI x, VI w) {  // (no byte sign at AVX-512: x negated where w < 0)
  return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
}
TINYLM_INLINE VF to_float(VI a) { return _mm512_maskz_cvtepi32_ps(kAll16, a); }
TINYLM_INLINE VF scales(const uint8_t* d) {
  return _mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d)));
}
#endif
// The operations both widths spell alike.
TINYLM_INLINE VI load_q(const uint8_t* p) {
  return TINYLM_SI(loadu)(reinterpret_cast<const VI*>(p));
}
TINYLM_INLINE VI splat(int32_t v) { return TINYLM_MM(set1_epi32)(v); }
TINYLM_INLINE VI zero_i() { return TINYLM_SI(setzero)(); }
TINYLM_INLINE VI byte_mask(uint8_t m) { return TINYLM_MM(set1_epi8)(static_cast<char>(m)); }
TINYLM_INLINE VI and_i(VI a, VI b) { return TINYLM_SI(and)(a, b); }
TINYLM_INLINE VI shift4(VI a) { return TINYLM_MM(srli_epi16)(a, 4); }
TINYLM_INLINE VI add16(VI a, VI b) { return TINYLM_MM(add_epi16)(a, b); }
TINYLM_INLINE VI add32(VI a, VI b) { return TINYLM_MM(add_epi32)(a, b); }
TINYLM_INLINE VI sub32(VI a, VI b) { return TINYLM_MM(sub_epi32)(a, b); }
TINYLM_INLINE VI dot_pairs(VI u, VI s) { return TINYLM_MM(maddubs_epi16)(u, s); }  // u unsigned
TINYLM_INLINE VI pair_sums(VI a) { return TINYLM_MM(madd_epi16)(a, TINYLM_MM(set1_epi16)(1)); }
TINYLM_INLINE VF splat_f(float v) { return TINYLM_MM(set1_ps)(v); }
TINYLM_INLINE VF zero_f() { return TINYLM_MM(setzero_ps)(); }
TINYLM_INLINE VF mul(VF a, VF b) { return TINYLM_MM(mul_ps)(a, b); }
TINYLM_INLINE VF fma_f(VF a, VF b, VF c) { return TINYLM_MM(fmadd_ps)(a, b, c); }
TINYLM_INLINE void store_f(float* p, VF v) { TINYLM_MM(storeu_ps)(p, v); }
#undef TINYLM_SI
#undef TINYLM_MM
constexpr int kPartOuts = kPackedOutputs / kParts;

TINYLM_INLINE VI splat4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return splat(v);
}

// One step of 4 weights (Q4_0: 4 + 4, both nibbles) of a part against row x's block at xq, into
// the part's sums: Q4_0 in int16 (16 products of a nibble and |q| <= 127 a lane cannot
// overflow), Q8_0 in int32 (two products already reach 2 * 128 * 127). total: the block's sums.
TINYLM_INLINE void step(const BlockQ8_0x16&, int s, VI w, const int8_t* xq, VI& acc) {
  acc = add32(acc, pair_sums(dot_pairs(abs8(w), sign8(splat4(xq + 4 * s), w))));
}
TINYLM_INLINE void step(const BlockQ4_0x16&, int s, VI w, const int8_t* xq, VI& acc) {
  const VI lo = and_i(w, byte_mask(15)), hi = and_i(shift4(w), byte_mask(15));
  acc =
      add16(acc, add16(dot_pairs(lo, splat4(xq + 4 * s)), dot_pairs(hi, splat4(xq + 16 + 4 * s))));
}
TINYLM_INLINE VF total(const BlockQ8_0x16&, VI acc, int32_t) { return to_float(acc); }
TINYLM_INLINE VF total(const BlockQ4_0x16&, VI acc, int32_t sx) {
  return to_float(sub32(pair_sums(acc), splat(sx)));
}

// Rows x[0 .. NR - 1] against parts p0 .. p0 + NP - 1 of one group (w: its nb packed blocks),
// into out (NR rows of 16).
template <int NR, int NP, class Packed>
TINYLM_INLINE void tile(float* out, const Row* x, const Packed* w, int64_t nb, int p0) {
  VF c[NR][NP];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) c[r][p] = zero_f();
  }
  for (int64_t k = 0; k < nb; ++k) {
    const Packed& blk = w[k];
    for (size_t line = 0; line < sizeof(Packed); line += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(&blk) + 4096 + line, 0, 2);
    VI acc[NR][NP];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) acc[r][p] = zero_i();
    }
#pragma GCC unroll 8
    for (int s = 0; s < kSteps<Packed>; ++s) {
#pragma GCC unroll 2
      for (int p = 0; p < NP; ++p) {
        const VI q = load_q(blk.qs[s] + (p0 + p) * kPartOuts * 4);
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) step(blk, s, q, x[r].q + k * kQuantBlock, acc[r][p]);
      }
    }
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) {
      const VF dw = scales(blk.d[(p0 + p) * kPartOuts]);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        c[r][p] = fma_f(total(blk, acc[r][p], x[r].sx[k]), mul(dw, splat_f(x[r].dx[k])), c[r][p]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int p = 0; p < NP; ++p) store_f(out + r * kPackedOutputs + (p0 + p) * kPartOuts, c[r][p]);
  }
}

// Decode takes both parts of a group at once (a row's activations loaded once); a tile of rows
// takes them one part at a time, to keep its registers.
constexpr int kTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 8 : 4;
template <class Packed>
TINYLM_INLINE void group(float* out, const Row* x, int64_t nrows, const Packed* w, int64_t nb,
                         const float*) {
  int64_t r = 0;
  for (; r + kTileRows <= nrows; r += kTileRows) {
    for (int p = 0; p < kParts; ++p) tile<kTileRows, 1>(out + r * kPackedOutputs, x + r, w, nb, p);
  }
  for (; r < nrows; ++r) tile<1, kParts>(out + r * kPackedOutputs, x + r, w, nb, 0);
}
#else
// Weight j's integer in lane o of a packed block.
TINYLM_INLINE int weight(const BlockQ8_0x16& b, int o, int j) {
  return static_cast<int8_t>(b.qs[j / 4][4 * o + j % 4]);
}
TINYLM_INLINE int weight(const BlockQ4_0x16& b, int o, int j) {
  const uint8_t byte = b.qs[j % 16 / 4][4 * o + j % 4];
  return (j < 16 ? byte & 15 : byte >> 4) - 8;
}

template <class Packed>
TINYLM_INLINE void group(float* out, const Row* x, int64_t nrows, const Packed* w, int64_t nb,
                         const float* table) {
  for (int64_t r = 0; r < nrows; ++r) {
    for (int o = 0; o < kPackedOutputs; ++o) {
      out[r * kPackedOutputs + o] = chain(x[r], nb, [&](int64_t k, int32_t& p, float& dw) {
        for (int j = 0; j < kQuantBlock; ++j) p += weight(w[k], o, j) * x[r].q[k * kQuantBlock + j];
        dw = table[w[k].d[o][0] | (w[k].d[o][1] << 8)];
      });
    }
  }
}
#endif

// The driver's items of (a block of rows) x (a few groups), as the f32-activation products: a
// thread's groups' blocks stay in cache while its rows pass over them. The last items take the
// tail.
constexpr int64_t kGroupsPerItem = 4, kRowBlock = 64;
template <class Packed, class Block>
void product(float* y, const int8_t* q, const float* dx, const int32_t* sx, const Packed* w,
             const float* b, int64_t rows, int64_t nin, int64_t nout) {
  const int64_t nb = nin / kQuantBlock, ngroups = nout / kPackedOutputs,
                tail = nout % kPackedOutputs;
  const float* table = f16_table();
  // (The tail's item counts as a whole item of groups past the last.)
  const int64_t ncols = ngroups + (tail ? kGroupsPerItem : 0);
  for_each_item(rows, kRowBlock, ncols, kGroupsPerItem,
                [&](int64_t r0, int64_t nr, int64_t g0, int64_t) {
                  const int64_t g1 = std::min(ngroups, g0 + kGroupsPerItem), r1 = r0 + nr;
                  Row xs[kRowBlock];
                  for (int64_t r = r0; r < r1; ++r)
                    xs[r - r0] = {q + r * nin, dx + r * nb, sx + r * nb};
                  if (g0 >= ngroups) {
                    const auto* rest = reinterpret_cast<const Block*>(w + ngroups * nb);
                    for (int64_t r = r0; r < r1; ++r) {
                      for (int64_t o = 0; o < tail; ++o) {
                        const int64_t at = ngroups * kPackedOutputs + o;
                        y[r * nout + at] =
                            tail_output(xs[r - r0], rest + o * nb, nb, table) + (b ? b[at] : 0.0f);
                      }
                    }
                    return;
                  }
                  alignas(64) float out[kRowBlock * kPackedOutputs];
                  for (int64_t g = g0; g < g1; ++g) {
                    group(out, xs, r1 - r0, w + g * nb, nb, table);
                    for (int64_t r = r0; r < r1; ++r) {
                      for (int64_t o = 0; o < kPackedOutputs; ++o) {
                        const int64_t at = g * kPackedOutputs + o;
                        y[r * nout + at] = out[(r - r0) * kPackedOutputs + o] + (b ? b[at] : 0.0f);
                      }
                    }
                  }
                });
}

}  // namespace

void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  product<BlockQ8_0x16, BlockQ8_0>(y, q, dx, sx, w, b, rows, nin, nout);
}
void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,
                       const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin,
                       int64_t nout) {
  product<BlockQ4_0x16, BlockQ4_0>(y, q, dx, sx, w, b, rows, nin, nout);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// quant_matmul_int8 below quantizes the rows to 8 bits first.
#define TINYLM_INT_MATMUL_ENTRIES(X)                                                         \
  X(void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,    \
                           const BlockQ8_0x16* w, const float* b, int64_t rows, int64_t nin, \
                           int64_t nout),                                                    \
    quant_matmul_int8, (y, q, dx, sx, w, b, rows, nin, nout))                                \
  X(void quant_matmul_int8(float* y, const int8_t* q, const float* dx, const int32_t* sx,    \
                           const BlockQ4_0x16* w, const float* b, int64_t rows, int64_t nin, \
                           int64_t nout),                                                    \
    quant_matmul_int8, (y, q, dx, sx, w, b, rows, nin, nout))
TINYLM_ACTIVE_ENTRIES(TINYLM_INT_MATMUL_ENTRIES)

namespace {

void check_args(const char* what, DType t, int64_t nin) {
  check(t == DType::q8_0 || t == DType::q4_0, "[", what, "] ", dtype_name(t),
        " weights: 8-bit activations meet q8_0 or q4_0 blocks");
  check(nin > 0 && nin % kQuantBlock == 0, "[", what, "] ", nin,
        " inputs: the inputs must be a positive multiple of 32 (one block)");
}

// One block of output `lane` of a group between ggml's block and the packed one.
template <class Block, class Packed>
void to_packed_block(const Block& native, Packed& packed, int lane) {
  std::memcpy(packed.d[lane], native.d, 2);
  for (int s = 0; s < kSteps<Packed>; ++s)
    std::memcpy(packed.qs[s] + 4 * lane, native.qs + 4 * s, 4);
}
template <class Block, class Packed>
void to_native_block(const Packed& packed, Block& native, int lane) {
  std::memcpy(native.d, packed.d[lane], 2);
  for (int s = 0; s < kSteps<Packed>; ++s)
    std::memcpy(native.qs + 4 * s, packed.qs[s] + 4 * lane, 4);
}

// Each group's 16 rows (or its packed blocks, to_packed false) copied aside, then rewritten in
// the other layout over the same bytes of out; the tail rows copied as they are.
template <class Block, class Packed>
void relayout(void* out, const void* in, int64_t nin, int64_t nout, bool to_packed) {
  const int64_t nb = nin / kQuantBlock, ngroups = nout / kPackedOutputs;
  const auto group_bytes = static_cast<size_t>(nb) * sizeof(Packed);
  auto* dst = static_cast<std::byte*>(out);
  const auto* src = static_cast<const std::byte*>(in);
  parallel_for(0, ngroups, grain_for(static_cast<int64_t>(group_bytes)), [&](int64_t g) {
    std::vector<std::byte> copy(src + g * group_bytes, src + (g + 1) * group_bytes);
    auto* rows = reinterpret_cast<Block*>(to_packed ? copy.data() : dst + g * group_bytes);
    auto* packed = reinterpret_cast<Packed*>(to_packed ? dst + g * group_bytes : copy.data());
    for (int lane = 0; lane < kPackedOutputs; ++lane) {
      for (int64_t k = 0; k < nb; ++k) {
        if (to_packed)
          to_packed_block(rows[lane * nb + k], packed[k], lane);
        else
          to_native_block(packed[k], rows[lane * nb + k], lane);
      }
    }
  });
  const size_t done = static_cast<size_t>(ngroups) * group_bytes;
  if (out != in)
    std::memcpy(dst + done, src + done,
                static_cast<size_t>(nout % kPackedOutputs * nb) * sizeof(Block));
}

template <class Block, class Packed>
void unpack_row(void* out, const void* packed, int64_t nin, int64_t nout, int64_t row) {
  const int64_t nb = nin / kQuantBlock, ngroups = nout / kPackedOutputs;
  auto* dst = static_cast<Block*>(out);
  if (row >= ngroups * kPackedOutputs) {
    const auto* rest =
        reinterpret_cast<const Block*>(static_cast<const Packed*>(packed) + ngroups * nb);
    std::memcpy(dst, rest + (row - ngroups * kPackedOutputs) * nb,
                static_cast<size_t>(nb) * sizeof(Block));
    return;
  }
  const Packed* group = static_cast<const Packed*>(packed) + row / kPackedOutputs * nb;
  for (int64_t k = 0; k < nb; ++k) {
    to_native_block(group[k], dst[k], static_cast<int>(row % kPackedOutputs));
  }
}

void relayout(DType t, void* out, const void* in, int64_t nin, int64_t nout, bool to_packed) {
  check_args(to_packed ? "pack_int8" : "unpack_int8", t, nin);
  check(nout >= 0, "[pack_int8] ", nout, " outputs");
  if (t == DType::q8_0)
    relayout<BlockQ8_0, BlockQ8_0x16>(out, in, nin, nout, to_packed);
  else
    relayout<BlockQ4_0, BlockQ4_0x16>(out, in, nin, nout, to_packed);
}

}  // namespace

void pack_int8(DType t, void* out, const void* w, int64_t nin, int64_t nout) {
  relayout(t, out, w, nin, nout, true);
}
void unpack_int8(DType t, void* out, const void* packed, int64_t nin, int64_t nout) {
  relayout(t, out, packed, nin, nout, false);
}

void unpack_int8_row(DType t, void* out, const void* packed, int64_t nin, int64_t nout,
                     int64_t row) {
  check_args("unpack_int8_row", t, nin);
  check(row >= 0 && row < nout, "[unpack_int8_row] row ", row, " of ", nout);
  if (t == DType::q8_0)
    unpack_row<BlockQ8_0, BlockQ8_0x16>(out, packed, nin, nout, row);
  else
    unpack_row<BlockQ4_0, BlockQ4_0x16>(out, packed, nin, nout, row);
}

void quant_matmul_int8(DType t, float* y, const float* x, const void* w, const float* b,
                       int64_t rows, int64_t nin, int64_t nout) {
  check_args("quant_matmul_int8", t, nin);
  check(rows >= 0 && nout >= 0, "[quant_matmul_int8] ", rows, " rows to ", nout, " outputs");
  if (rows == 0) return;
  // The rows as Q8_0 blocks: their integers, each block's scale and 8 times its sum.
  const int64_t nb = nin / kQuantBlock;
  thread_local std::vector<BlockQ8_0> blocks;
  thread_local AlignedVector<int8_t> q;
  thread_local AlignedVector<float> dx;
  thread_local AlignedVector<int32_t> sx;
  blocks.resize(static_cast<size_t>(rows * nb));
  q.resize(static_cast<size_t>(rows * nin));
  dx.resize(blocks.size());
  sx.resize(blocks.size());
  quantize_q8_0(x, blocks.data(), rows * nin);
  const float* table = f16_table();
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::copy_n(blocks[i].qs, kQuantBlock, q.data() + i * kQuantBlock);
    dx[i] = table[blocks[i].d[0] | (blocks[i].d[1] << 8)];
    int32_t sum = 0;
    for (int8_t v : blocks[i].qs) sum += v;
    sx[i] = 8 * sum;
  }
  if (t == DType::q8_0)
    active::quant_matmul_int8(y, q.data(), dx.data(), sx.data(),
                              static_cast<const BlockQ8_0x16*>(w), b, rows, nin, nout);
  else
    active::quant_matmul_int8(y, q.data(), dx.data(), sx.data(),
                              static_cast<const BlockQ4_0x16*>(w), b, rows, nin, nout);
}

}  // namespace tinylm::kernels
#endif
