#include "tinylm/kernels/matmul/bf16_dot.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/unit_choice.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/bf16_amx.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/matmul/tile_sums.h"

// Only the avx512 pass has kernels, compiled for AVX512_BF16 on top of the level's set: the
// public entry points call them only where the CPU has it.
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
TINYLM_TARGET_PUSH_OF("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")
namespace tinylm::kernels::avx512 {

#include "tinylm/kernels/matmul/stream_driver.h"

namespace {

constexpr int64_t kTileElems = kTile * kTile;  // a 16 x 16 tile: 8 pairs of 16 columns
constexpr int64_t kPairsPerBand = kTile / 2;

TINYLM_INLINE __m512 dot(__m512 acc, __m512i x, __m512i w) {
  return _mm512_dpbf16_ps(acc, (__m512bh)x, (__m512bh)w);
}
TINYLM_INLINE __m512i load_pairs(const Bf16* p) { return _mm512_loadu_si512(p); }

// The activations rounded to bf16 (VCVTNEPS2BF16 rounds as bf16_dot_reference.h's
// bf16_dot_round: checked over every float), into a buffer of this thread's, reused.
const uint16_t* round_rows(const float* x, int64_t n) {
  thread_local AlignedVector<uint16_t> buf;
  buf.resize(static_cast<size_t>(n));
  uint16_t* out = buf.data();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    std::memcpy(out + i, &h, sizeof h);
  }
  if (i < n) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(first_lanes16(n - i), x + i));
    std::memcpy(out + i, &h, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
  return out;
}

// An input pair (2p, 2p + 1) of a rounded row, as 32 bits: what VDPBF16PS broadcasts.
TINYLM_INLINE __m512i pair_of(const uint16_t* xr, int64_t p) {
  uint32_t v;
  std::memcpy(&v, xr + 2 * p, sizeof v);
  return _mm512_set1_epi32(static_cast<int>(v));
}

// --- matmul_in_out_bf16 ------------------------------------------------------------------------

// Decode: part[c ..] = one row's chain over a chunk (`bands` bands of 16 inputs) for every
// column. NB 16-column blocks at a time, so that NB chains are in flight (one alone left the
// instruction's latency exposed), each band's NB tiles read in order: 2 KiB runs, which the
// hardware prefetchers follow (prefetching 1-8 KiB ahead as stream.cpp's decode does was
// slower here).
template <int NB>
TINYLM_INLINE void chunk_blocks(float* part, const uint16_t* xr, const Bf16* t, int64_t bands,
                                int64_t band) {
  __m512 acc[NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < bands; ++b) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
#pragma GCC unroll 8
      for (int64_t p = 0; p < kPairsPerBand; ++p)
        acc[j] = dot(acc[j], pair_of(xr, b * kPairsPerBand + p),
                     load_pairs(t + b * band + j * kTileElems + p * 2 * kTile));
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) _mm512_storeu_ps(part + j * kTile, acc[j]);
}

void chunk_row(float* part, const uint16_t* xr, const Bf16* w, int64_t bands, int64_t nout) {
  constexpr int NB = 4;
  const int64_t band = kTile * nout;
  int64_t c = 0;
  for (; c + NB * kTile <= nout; c += NB * kTile)
    chunk_blocks<NB>(part + c, xr, w + c * kTile, bands, band);
  for (; c < nout; c += kTile) chunk_blocks<1>(part + c, xr, w + c * kTile, bands, band);
}

// One or two rows: the driver's chunk queue, each chunk's chains into its own partial row.
void in_out_decode(float* y, const uint16_t* xb, const Bf16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout) {
  sum_chunks(y, b, rows, nin, nout, [&](int64_t ck, float* part, int64_t ld) {
    const int64_t i0 = ck * kChunk, bands = (std::min(nin, i0 + kChunk) - i0) / kTile;
    for (int64_t r = 0; r < rows; ++r)
      chunk_row(part + r * ld, xb + r * nin + i0, w + i0 * nout, bands, nout);
  });
}

// The format: pairs of bf16 inputs against pairs of bf16 weights (the pairs layout), VDPBF16PS.
struct Pairs {
  using Weight = Bf16;
  using In = uint16_t;
  using X = __m512i;
  using W = __m512i;
  static constexpr int64_t kStep = 2 * kLanes;
  static constexpr int kLocality = 3;  // (into L1: into L2, the next chunk's first tile waited)
  static constexpr bool kPrefetchSelf = true;
  TINYLM_INLINE static X broadcast(const uint16_t* x, int64_t j) { return pair_of(x, j); }
  TINYLM_INLINE static X load_x(const uint16_t* p) { return _mm512_loadu_si512(p); }
  TINYLM_INLINE static W load_w(const Bf16* p) { return load_pairs(p); }
  TINYLM_INLINE static f32x16 madd(f32x16 acc, X x, W w) { return f32x16{dot(acc.v, x, w)}; }
};

// Several rows: items of 128 rows x 96 columns. An item starts its rows at the bias and adds
// each chunk's chains in order, as decode does: 8 rows x 3 column blocks a register tile (24
// accumulators), the chunk's 12 KiB of weights kept in L1 while the block's rows go through
// them, the next chunk's prefetched by the first tile. The sums build up in a block of the
// item's own (rows of 96 floats, on the stack) and the last chunk's tiles write them to y: y's
// rows, nout floats apart, fall into a few L1 sets (3072 floats is a multiple of 4 KiB), and
// summed in place they evicted one another between chunks.
void in_out_rows(float* y, const uint16_t* xb, const Bf16* w, const float* b, int64_t rows,
                 int64_t nin, int64_t nout) {
  constexpr int MR = 8, NV = 3;
  constexpr int64_t kGroup = 2 * NV * kTile, kRowBlock = 128;
  const int64_t band = kTile * nout;
  for_each_item(
      rows, kRowBlock, nout, kGroup, [&](int64_t r0, int64_t nr, int64_t c0, int64_t width) {
        alignas(64) float block[kRowBlock * kGroup];  // row r's at block + r * width
        for (int64_t r = 0; r < nr; ++r) {
          for (int64_t c = 0; c < width; c += kTile)
            _mm512_store_ps(block + r * width + c,
                            b ? _mm512_loadu_ps(b + c0 + c) : _mm512_setzero_ps());
        }
        for (int64_t i0 = 0; i0 < nin; i0 += kChunk) {
          const int64_t bands = (std::min(nin, i0 + kChunk) - i0) / kTile;
          const Bf16* wc = w + i0 * nout + c0 * kTile;
          // The next chunk's weights, if whole; else this chunk's (in L1 by then).
          const Bf16* next = i0 + 2 * kChunk <= nin ? wc + kChunk * nout : wc;
          const TileSums s = i0 + kChunk < nin ? TileSums::in(block, width)
                                               : TileSums{block, width, y + r0 * nout + c0, nout};
          const InOutTile<Pairs> tile{
              s, xb + r0 * nin + i0, nin, {wc, band, 2 * kTile, kTileElems}, next, bands};
          tile_vectors<MR, NV>(tile, nr, width / kTile);
        }
      });
}

// --- matmul_out_in_bf16 ------------------------------------------------------------------------

// Items of 256 rows x 16 NO outputs; within an item NO outputs at a time, the weights 2 NO
// outputs on prefetched (one stream per thread in decode).
template <int MR, int NO>
void out_in_rows(float* y, const uint16_t* xb, const Bf16* w, int64_t rows, int64_t nin,
                 int64_t nout) {
  constexpr int64_t kRowBlock = 256, kGroup = 16 * NO;
  for_each_item(rows, kRowBlock, nout, kGroup, [&](int64_t r0, int64_t nr, int64_t o0, int64_t n) {
    const OutInTile<Pairs, NoTail, true> head{
        y + r0 * nout + o0, nout,   xb + r0 * nin, nin, w + o0 * nin, w, nout - o0,
        nin / (2 * kLanes), nullptr};
    tile_vectors<MR, NO>(head, nr, n);
  });
}

}  // namespace

void matmul_in_out_bf16(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                        int64_t nin, int64_t nout) {
  if (bf16_dot_unit() == Bf16Unit::amx) return amx_in_out(y, x, w, b, rows, nin, nout);
  const uint16_t* xb = round_rows(x, rows * nin);
  if (rows <= 2) return in_out_decode(y, xb, w, b, rows, nin, nout);
  in_out_rows(y, xb, w, b, rows, nin, nout);
}

// 1 or 2 rows x 4 outputs a tile in decode, 6 x 4 up to 16 rows, 4 x 6 beyond (here all 24
// accumulators and 4 inputs stay in registers; stream.cpp's widening 4 x 6 tile did not).
void matmul_out_in_bf16(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                        int64_t nout) {
  if (bf16_dot_unit() == Bf16Unit::amx) return amx_out_in(y, x, w, rows, nin, nout);
  const uint16_t* xb = round_rows(x, rows * nin);
  if (rows == 1) return out_in_rows<1, 4>(y, xb, w, rows, nin, nout);
  if (rows == 2) return out_in_rows<2, 4>(y, xb, w, rows, nin, nout);
  if (rows <= 16) return out_in_rows<6, 4>(y, xb, w, rows, nin, nout);
  out_in_rows<4, 6>(y, xb, w, rows, nin, nout);
}

}  // namespace tinylm::kernels::avx512
TINYLM_TARGET_POP_OF
#endif

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

namespace avx512 {
#if defined(TINYLM_X86_LEVELS)
void matmul_in_out_bf16(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                        int64_t nin, int64_t nout);
void matmul_out_in_bf16(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                        int64_t nout);
#else  // never called: bf16_dot_available() is false
inline void matmul_in_out_bf16(float*, const float*, const Bf16*, const float*, int64_t, int64_t,
                               int64_t) {}
inline void matmul_out_in_bf16(float*, const float*, const Bf16*, int64_t, int64_t, int64_t) {}
#endif
}  // namespace avx512

std::string_view bf16_unit_name(Bf16Unit u) { return u == Bf16Unit::amx ? "amx" : "vdpbf16ps"; }

namespace {
constinit UnitChoice<Bf16Unit> unit({
    .env = "TINYLM_BF16_UNIT",
    .units = {Bf16Unit::vdpbf16ps, Bf16Unit::amx},
    .name = bf16_unit_name,
    .best = [] { return cpu_has_amx_bf16() ? Bf16Unit::amx : Bf16Unit::vdpbf16ps; },
    .offered = [](Bf16Unit u) { return u != Bf16Unit::amx || cpu_has_amx_bf16(); },
    .missing = "AMX-BF16",
});
}  // namespace

Bf16Unit bf16_dot_unit() { return unit.get(); }
void set_bf16_dot_unit(Bf16Unit u) { unit.set(u); }

bool bf16_dot_available() { return active_isa() == Isa::avx512 && cpu_has_avx512_bf16(); }

std::string bf16_products_summary() {
  if (bf16_dot_available()) return std::string(bf16_unit_name(bf16_dot_unit()));
  return "none (they need AVX512_BF16 at the avx512 level)";
}

void require_bf16_dot(const char* what) {
  check(bf16_dot_available(), what, ": needs AVX512_BF16 at the avx512 level; this CPU ",
        cpu_has_avx512_bf16() ? "has it, but the level in use is " : "lacks it (level ",
        isa_summary(), cpu_has_avx512_bf16() ? "" : ")");
}

namespace {

// Within each 16 x 16 tile, rows (16 columns of one input) to pairs and back.
template <bool ToPairs>
void permute_tiles(Bf16* w, int64_t nin, int64_t nout) {
  check(can_tile(nin, nout), "bf16 pairs: a ", nin, " x ", nout,
        " matrix does not split into 16 x 16 tiles");
  const int64_t ntiles = nin / kTile * (nout / kTile);
  parallel_for(0, ntiles, 64, [&](int64_t t) {
    Bf16* tile = w + t * kTile * kTile;
    Bf16 copy[kTile * kTile];
    std::memcpy(copy, tile, sizeof copy);
    for (int64_t i = 0; i < kTile; ++i) {
      for (int64_t c = 0; c < kTile; ++c) {
        const int64_t row = i * kTile + c, pair = (i / 2) * 2 * kTile + c * 2 + i % 2;
        if constexpr (ToPairs)
          tile[pair] = copy[row];
        else
          tile[row] = copy[pair];
      }
    }
  });
}

}  // namespace

void tiles_to_pairs(Bf16* w, int64_t nin, int64_t nout) { permute_tiles<true>(w, nin, nout); }
void pairs_to_tiles(Bf16* w, int64_t nin, int64_t nout) { permute_tiles<false>(w, nin, nout); }

void matmul_in_out_bf16(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                        int64_t nin, int64_t nout) {
  require_bf16_dot("matmul_in_out_bf16");
  check(can_tile(nin, nout), "matmul_in_out_bf16: a ", nin, " x ", nout,
        " matrix does not split into 16 x 16 tiles");
  avx512::matmul_in_out_bf16(y, x, w, b, rows, nin, nout);
}

void matmul_out_in_bf16(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                        int64_t nout) {
  require_bf16_dot("matmul_out_in_bf16");
  check(nin % 32 == 0, "matmul_out_in_bf16: ", nin, " inputs, not a multiple of 32");
  avx512::matmul_out_in_bf16(y, x, w, rows, nin, nout);
}

}  // namespace tinylm::kernels
#endif
