#include "tinylm/kernels/quant/matmul.h"

#include <algorithm>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/matmul/tile_sums.h"
#include "tinylm/kernels/quant/prefetch.h"
#include "tinylm/kernels/quant/widen.h"

TINYLM_LEVEL_BEGIN

#include "tinylm/kernels/matmul/stream_driver.h"

namespace {

// A block's scales, computed once for its pieces (the f16 table gives fp16 values): d for Q8_0
// and Q4_0, the 16 group scales d * s for Q6_K, the sub-blocks' d * sc and -(dmin * m) for Q4_K
// and Q5_K.
TINYLM_INLINE f32x16 scales(const BlockQ8_0& b, const float* table) {
  return splat_scale(b.d, table);
}
TINYLM_INLINE f32x16 scales(const BlockQ4_0& b, const float* table) {
  return splat_scale(b.d, table);
}
TINYLM_INLINE f32x16 scales(const BlockQ6_K& b, const float* table) { return q6_scales(b, table); }
TINYLM_INLINE f32x16 scales(const BlockQ4_K& b, const float* table) { return k_scales(b, table); }
TINYLM_INLINE f32x16 scales(const BlockQ5_K& b, const float* table) { return k_scales(b, table); }

// Piece p's 32 weights as two vectors: q * d for Q8_0, (q - 8) * d for Q4_0 (exact: the
// products fit a float), (d * s) * (q - 32) for Q6_K and (d * sc) * q - dmin * m for Q4_K /
// Q5_K, as ggml dequantizes them. s: scales(b).
TINYLM_INLINE void weights(const BlockQ8_0& b, f32x16 s, int, f32x16& lo, f32x16& hi) {
  lo = widen_i8(b.qs) * s;
  hi = widen_i8(b.qs + kLanes) * s;
}
TINYLM_INLINE void weights(const BlockQ4_0& b, f32x16 s, int, f32x16& lo, f32x16& hi) {
  q4_weights(b.qs, s, lo, hi);
}
TINYLM_INLINE void weights(const BlockQ6_K& b, f32x16 s, int p, f32x16& lo, f32x16& hi) {
  q6_weights(b, p, s, lo, hi);
}
TINYLM_INLINE void weights(const BlockQ4_K& b, f32x16 s, int p, f32x16& lo, f32x16& hi) {
  k_weights(b.qs, nullptr, s, p, lo, hi);
}
TINYLM_INLINE void weights(const BlockQ5_K& b, f32x16 s, int p, f32x16& lo, f32x16& hi) {
  k_weights(b.qs, b.qh, s, p, lo, hi);
}

// The block decoding both products share: NO outputs' rows of blocks (w: the first's, nb
// blocks a row) dequantized a piece of 32 weights (two vectors) at a time, in input order, each
// block's scales once: fn(i, o, lo, hi) for piece i of output o, the blocks read from memory.
template <int NO, class Block, class Fn>
TINYLM_INLINE void for_each_piece(const Block* w, int64_t nb, const float* table, const Fn& fn) {
  for (int64_t k = 0; k < nb; ++k) {
    f32x16 s[NO];
#pragma GCC unroll 4
    for (int o = 0; o < NO; ++o) s[o] = scales(w[o * nb + k], table);
#pragma GCC unroll 8
    for (int p = 0; p < kPieces<Block>; ++p) {
#pragma GCC unroll 4
      for (int o = 0; o < NO; ++o) {
        prefetch_piece(w + o * nb + k, p);
        f32x16 lo, hi;
        weights(w[o * nb + k], s[o], p, lo, hi);
        fn(k * kPieces<Block> + p, o, lo, hi);
      }
    }
  }
}

// Decode: outputs o0 .. o0 + NO - 1 for NR rows (NR <= 2), each piece's weights dequantized once
// for the rows. w: the first output's row of blocks; nb blocks a row.
template <int NR, int NO, class Block>
TINYLM_INLINE void decode_outputs(float* y, int64_t ldy, const float* x, int64_t nin,
                                  const Block* w, int64_t nb, const float* b, const float* table) {
  f32x16 a[NR][NO];  // (loops fully unrolled: the accumulators live in registers)
#pragma GCC unroll 2
  for (int j = 0; j < NR; ++j) {
#pragma GCC unroll 4
    for (int o = 0; o < NO; ++o) a[j][o] = f32x16{};
  }
  for_each_piece<NO>(w, nb, table, [&](int64_t i, int o, f32x16 lo, f32x16 hi) {
#pragma GCC unroll 2
    for (int j = 0; j < NR; ++j) {
      const float* xj = x + j * nin + i * kQuantBlock;
      a[j][o] = fma(load(xj), lo, a[j][o]);
      a[j][o] = fma(load(xj + kLanes), hi, a[j][o]);
    }
  });
  for (int j = 0; j < NR; ++j) {
    for (int o = 0; o < NO; ++o) y[j * ldy + o] = hsum(a[j][o]) + (b ? b[o] : 0.0f);
  }
}

template <class Block>
void decode(float* y, const float* x, const Block* w, const float* b, int64_t rows, int64_t nin,
            int64_t nout) {
  const int64_t nb = nin / kWeights<Block>;
  const float* table = f16_table();
  for_each_four(nout, [&](int64_t o0, int64_t n) {
    const Block* wo = w + o0 * nb;
    const float* bo = b ? b + o0 : nullptr;
    if (n == 4 && rows == 2) return decode_outputs<2, 4>(y + o0, nout, x, nin, wo, nb, bo, table);
    if (n == 4) return decode_outputs<1, 4>(y + o0, nout, x, nin, wo, nb, bo, table);
    for (int64_t o = 0; o < n; ++o) {
      for (int64_t r = 0; r < rows; ++r)
        decode_outputs<1, 1>(y + r * nout + o0 + o, nout, x + r * nin, nin, wo + o * nb, nb,
                             bo ? bo + o : nullptr, table);
    }
  });
}

// Prefill: a register tile of MR rows x NO outputs over dequantized weights, each output's
// chain as decode computes it: 4 x 6 on AVX-512 (24 accumulators), 1 x 4 elsewhere.
constexpr int kTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 4 : 1;
constexpr int kTileOuts = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 6 : 4;
// Inputs per pass: a tile's dequantized weights (kTileOuts x kSpan floats, at most 24 KiB) stay
// in L1 whatever nin is. The chains carry over from span to span through memory, which keeps
// their order, and so their bits. (A multiple of every block's weights.)
constexpr int64_t kSpan = 1024;

// The driver's register tile over one span of n inputs: the chains start from zero (first) or
// from carry (row r, output o at carry + (r * ldc + o) * kLanes), and end in y plus the bias
// (last) or go back to carry. x: the span's inputs of the tile's first row, rows ldx apart; w:
// the outputs' dequantized weights for the span, n apart.
struct SpanTile {
  using Format = Widen<float>;
  static constexpr bool kInputsFirst = true;
  static constexpr int64_t kInner = 1;
  float* y;
  int64_t ldy;
  const float* x;
  int64_t ldx;
  const float* w;
  int64_t n;
  float* carry;
  int64_t ldc;
  bool first, last;
  const float* b;
  int64_t steps;  // n / 16

  f32x16 start(int r, int o) const {
    return first ? f32x16{} : load(carry + (r * ldc + o) * kLanes);
  }
  void prefetch(int64_t, int64_t, int) const {}
  f32x16 weight(int64_t i, int64_t, int o) const { return load(w + o * n + i * kLanes); }
  f32x16 input(int64_t i, int64_t, int r) const { return load(x + r * ldx + i * kLanes); }
  template <int NO>
  void finish(int r, const f32x16 (&acc)[NO]) const {
    for (int o = 0; o < NO; ++o) {
      if (last)
        y[r * ldy + o] = hsum(acc[o]) + (b ? b[o] : 0.0f);
      else
        store(carry + (r * ldc + o) * kLanes, acc[o]);
    }
  }
  SpanTile rows(int64_t r) const {
    SpanTile t = *this;
    t.y += r * ldy;
    t.x += r * ldx;
    t.carry += r * ldc * kLanes;
    return t;
  }
  SpanTile later() const { return *this; }
  template <int N>
  SpanTile vectors(int64_t o) const {
    SpanTile t = *this;
    t.y += o;
    t.w += o * n;
    t.carry += o * kLanes;
    t.b = b ? b + o : nullptr;
    return t;
  }
};

// nb blocks (consecutive in one output's row) into floats at wd. (Arguments by value: the
// vector stores may alias anything, so values read through references would be reloaded after
// each.)
template <class Block>
void dequantize_blocks(float* wd, const Block* w, int64_t nb, const float* table) {
  for_each_piece<1>(w, nb, table, [wd](int64_t i, int, f32x16 lo, f32x16 hi) {
    store(wd + i * kQuantBlock, lo);
    store(wd + i * kQuantBlock + kLanes, hi);
  });
}

// Items of (a block of rows) x (a group of outputs), row blocks outermost so a thread walking
// its share keeps the block's inputs in L2. Each tile's worth of outputs is dequantized, a span
// of inputs at a time, into an L1 buffer that every row of the block then reads.
template <class Block>
void prefill(float* y, const float* x, const Block* w, const float* b, int64_t rows, int64_t nin,
             int64_t nout) {
  constexpr int64_t kGroup = 4 * kTileOuts;
  // Rows per block: their inputs within ~768 KiB of L2.
  const int64_t row_block = std::clamp<int64_t>((int64_t{192} << 10) / nin, 16, 256);
  const int64_t nb = nin / kWeights<Block>;
  const float* table = f16_table();
  for_each_item(
      rows, row_block, nout, kGroup, [&](int64_t r0, int64_t nr, int64_t o0, int64_t width) {
        const int64_t o1 = o0 + width;
        thread_local AlignedVector<float> scratch, chains;  // grown once, then reused
        scratch.resize(static_cast<size_t>(kTileOuts * kSpan));
        chains.resize(static_cast<size_t>(row_block * kTileOuts * kLanes));
        float* wd = scratch.data();
        float* carry = chains.data();
        float* yb = y + r0 * nout;
        for (int64_t s = o0; s < o1; s += kTileOuts) {
          const int64_t n = std::min<int64_t>(kTileOuts, o1 - s);
          for (int64_t i0 = 0; i0 < nin; i0 += kSpan) {
            const int64_t span = std::min(kSpan, nin - i0);
            const bool first = i0 == 0, last = i0 + span == nin;
            for (int64_t o = 0; o < n; ++o) {
              dequantize_blocks(wd + o * span, w + (s + o) * nb + i0 / kWeights<Block>,
                                span / kWeights<Block>, table);
            }
            const SpanTile tile{
                yb + s, nout, x + r0 * nin + i0,   nin,          wd, span, carry, kTileOuts,
                first,  last, b ? b + s : nullptr, span / kLanes};
            tile_vectors<kTileRows, kTileOuts>(tile, nr, n);
          }
        }
      });
}

template <class Block>
void product(float* y, const float* x, const Block* w, const float* b, int64_t rows, int64_t nin,
             int64_t nout) {
  if (rows == 0) return;
  if (rows <= 2) return decode(y, x, w, b, rows, nin, nout);
  prefill(y, x, w, b, rows, nin, nout);
}

}  // namespace

// The block types, each with its own entry point (TINYLM_QUANT_BLOCKS(X) applies X to each).
#define TINYLM_QUANT_BLOCKS(X) X(BlockQ8_0) X(BlockQ4_0) X(BlockQ6_K) X(BlockQ4_K) X(BlockQ5_K)
#define TINYLM_QUANT_SIGNATURE(Block)                                                       \
  void quant_matmul(float* y, const float* x, const Block* w, const float* b, int64_t rows, \
                    int64_t nin, int64_t nout)

#define TINYLM_QUANT_PRODUCT(Block) \
  TINYLM_QUANT_SIGNATURE(Block) { product(y, x, w, b, rows, nin, nout); }
TINYLM_QUANT_BLOCKS(TINYLM_QUANT_PRODUCT)
#undef TINYLM_QUANT_PRODUCT

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// The public functions check the shapes first.
#define TINYLM_QUANT_ENTRIES(X)                                                     \
  X(TINYLM_QUANT_SIGNATURE(BlockQ8_0), quant_matmul, (y, x, w, b, rows, nin, nout)) \
  X(TINYLM_QUANT_SIGNATURE(BlockQ4_0), quant_matmul, (y, x, w, b, rows, nin, nout)) \
  X(TINYLM_QUANT_SIGNATURE(BlockQ6_K), quant_matmul, (y, x, w, b, rows, nin, nout)) \
  X(TINYLM_QUANT_SIGNATURE(BlockQ4_K), quant_matmul, (y, x, w, b, rows, nin, nout)) \
  X(TINYLM_QUANT_SIGNATURE(BlockQ5_K), quant_matmul, (y, x, w, b, rows, nin, nout))
TINYLM_ACTIVE_ENTRIES(TINYLM_QUANT_ENTRIES)

namespace {
template <class Block>
void checked(float* y, const float* x, const Block* w, const float* b, int64_t rows, int64_t nin,
             int64_t nout) {
  check(rows >= 0 && nout >= 0 && nin > 0 && nin % kWeights<Block> == 0, "[quant_matmul] ", rows,
        " rows of ", nin, " inputs to ", nout,
        " outputs: the inputs must be a positive multiple of ", kWeights<Block>, " (one block)");
  active::quant_matmul(y, x, w, b, rows, nin, nout);
}
}  // namespace

#define TINYLM_QUANT_CHECKED(Block) \
  TINYLM_QUANT_SIGNATURE(Block) { checked(y, x, w, b, rows, nin, nout); }
TINYLM_QUANT_BLOCKS(TINYLM_QUANT_CHECKED)
#undef TINYLM_QUANT_CHECKED

void quant_matmul(DType t, float* y, const float* x, const void* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout) {
  switch (t) {
    case DType::q8_0:
      return quant_matmul(y, x, static_cast<const BlockQ8_0*>(w), b, rows, nin, nout);
    case DType::q4_0:
      return quant_matmul(y, x, static_cast<const BlockQ4_0*>(w), b, rows, nin, nout);
    case DType::q6_k:
      return quant_matmul(y, x, static_cast<const BlockQ6_K*>(w), b, rows, nin, nout);
    case DType::q4_k:
      return quant_matmul(y, x, static_cast<const BlockQ4_K*>(w), b, rows, nin, nout);
    case DType::q5_k:
      return quant_matmul(y, x, static_cast<const BlockQ5_K*>(w), b, rows, nin, nout);
    default:
      fail("[quant_matmul] ", dtype_name(t), " is not a block type");
  }
}

}  // namespace tinylm::kernels
#endif
