#include "tinylm/kernels/matmul/stream.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/tile_sums.h"

namespace tinylm::kernels {
namespace {
// Element (i, c) of a Conv1D matrix (nin, nout) stored in layout L.
template <Layout L, class Ptr>
inline Ptr element(Ptr w, int64_t nout, int64_t i, int64_t c) {
  if constexpr (L == Layout::rows) return w + i * nout + c;
  return w + ((i / kTile) * (nout / kTile) + c / kTile) * (kTile * kTile) + (i % kTile) * kTile +
         c % kTile;
}
}  // namespace
}  // namespace tinylm::kernels

TINYLM_LEVEL_BEGIN

// Conv1D products sum their inputs in chunks of 64 weight rows (the driver's kChunk): per chunk
// one chain of fused multiply-adds in input order, from zero (a partial per chunk), the partials
// then added to the bias in chunk order. Decode and prefill alike, so they round alike.
#include "tinylm/kernels/matmul/stream_driver.h"

namespace {

// accumulate_rows's step (below): NC column vectors' chains from py[0 .. 16 NC) through R weight
// rows, the weights of vector j and row k at wc + j * vstep + k * kstep.
template <int R, bool Tiles, int NC, class W>
TINYLM_INLINE void columns(float* py, const float* x, const W* wc, int64_t kstep, int64_t vstep) {
  if constexpr (Tiles) {  // (4 KiB ahead, a line at a time)
    const char* ahead = reinterpret_cast<const char*>(wc) + 4096;
    for (size_t b = 0; b < NC * vstep * sizeof(W); b += 64) __builtin_prefetch(ahead + b, 0, 2);
  }
  f32x16 acc[NC];
#pragma GCC unroll 4
  for (int j = 0; j < NC; ++j) acc[j] = load(py + j * kLanes);
#pragma GCC unroll 16
  for (int k = 0; k < R; ++k) {
#pragma GCC unroll 4
    for (int j = 0; j < NC; ++j) acc[j] = fma(x[k], load(wc + j * vstep + k * kstep), acc[j]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < NC; ++j) store(py + j * kLanes, acc[j]);
}

// py[c] = fma(x[k], W(k, c), py[c]) for k < R, in order, for c in [0, nout): R weight rows in
// one pass, the chain carried through the partial sums in memory between passes. The 16
// weights W(k, c..c+15), c a multiple of 16, sit at w + k * nout + c in Layout::rows, or at
// w + k * 16 + c * 16 in one 16-row band of Layout::tiles, which is then read as one
// sequential stream; the same products in the same order either way. The columns' chains are
// independent, so out-of-order execution overlaps them (decode is bound by memory anyway).
//
// Vectors always start at column 0, not at the weights' first 64-byte boundary: memory-mapped
// f32 weights sit wherever the file put them, and peeling columns to align the loads would
// make the rounding depend on that address. (Our own files and owned weights are aligned.)
//
// The tiled stream is prefetched 4 KiB ahead into L2: on its own, one stream per core left
// the hardware prefetchers too few lines in flight (docs/performance-history.md). Row-major
// matrices are 16 streams per pass, which the prefetchers keep busy enough.
template <int R, Layout L, class W>
TINYLM_INLINE void accumulate_rows(float* py, const float* x, const W* w, int64_t nout) {
  constexpr bool tiles = L == Layout::tiles;
  static_assert(!tiles || R == kTile);
  // Compile-time steps for tiles: the loads then take immediate offsets.
  const int64_t kstep = tiles ? kTile : nout;
  constexpr int64_t VStep = tiles ? kTile * kTile : kLanes;
  const int64_t body_end = nout / kLanes * kLanes;
  const W* wc = w;
  int64_t c = 0;
  // Two column vectors at a time, their chains interleaved (one, or four, measured slower).
  for (; c + 2 * kLanes <= body_end; c += 2 * kLanes, wc += 2 * VStep)
    columns<R, tiles, 2>(py + c, x, wc, kstep, VStep);
  for (; c < body_end; c += kLanes, wc += VStep) columns<R, tiles, 1>(py + c, x, wc, kstep, VStep);
  for (c = body_end; c < nout; ++c) {  // row-major only: tiles have no ragged columns
    float acc = py[c];
    for (int k = 0; k < R; ++k) acc = __builtin_fmaf(x[k], to_float(w[k * kstep + c]), acc);
    py[c] = acc;
  }
}

// A whole 64-row chunk of a tiled matrix per column vector (four bands, four sequential
// streams), the chain in a register from zero: no partial sums to reload between bands.
template <class W>
TINYLM_INLINE void chunk_tiles(float* py, const float* x, const W* w, int64_t nout) {
  constexpr int64_t kAhead = 4096, kLine = 64, kBands = kChunk / kTile;
  const int64_t band = kTile * nout;  // elements from one band of the chunk to the next
  for (int64_t c = 0; c < nout; c += kLanes) {
    const W* t = w + c * kTile;  // the column block's tile in the chunk's first band
    for (int64_t b = 0; b < kBands; ++b) {
      const char* ahead = reinterpret_cast<const char*>(t + b * band) + kAhead;
      for (size_t off = 0; off < kTile * kTile * sizeof(W); off += kLine)
        __builtin_prefetch(ahead + off, 0, 2);
    }
    f32x16 acc{};
#pragma GCC unroll 4
    for (int64_t b = 0; b < kBands; ++b) {
#pragma GCC unroll 16
      for (int k = 0; k < kTile; ++k)
        acc = fma(x[b * kTile + k], load(t + b * band + k * kTile), acc);
    }
    store(py + c, acc);
  }
}

// Decode (a row or two), and every row of matrices that do not split into tiles:
// memory-bound. The driver's chunk queue hands out chunks of 64 weight rows; each chunk's
// product goes to its own partial row, 16 weight rows per pass over it.
template <Layout L, class W>
void matvec_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
                   int64_t nout) {
  constexpr int kPass = 16;
  static_assert(kPass == kTile);
  sum_chunks(y, b, rows, nin, nout, [&](int64_t ck, float* pc, int64_t ld) {
    const int64_t i0 = ck * kChunk, i1 = std::min(nin, i0 + kChunk);
    if constexpr (L == Layout::tiles) {
      if (i1 - i0 == kChunk) {
        for (int64_t r = 0; r < rows; ++r)
          chunk_tiles(pc + r * ld, x + r * nin + i0, w + i0 * nout, nout);
        return;
      }
    }
    std::fill(pc, pc + rows * ld, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      float* py = pc + r * ld;
      const float* xr = x + r * nin;
      int64_t i = i0;
      for (; i + kPass <= i1; i += kPass) accumulate_rows<kPass, L>(py, xr + i, w + i * nout, nout);
      if constexpr (L == Layout::rows) {  // (tiled matrices have whole bands only)
        for (; i < i1; ++i) accumulate_rows<1, L>(py, xr + i, w + i * nout, nout);
      }
    }
  });
}

// Every column vector of a group [0, width) through one chunk, for nr rows: MR x NV tiles. xc:
// the chunk's inputs of each row, kChunk apart (gather_chunk).
template <int MR, int NV, class W>
void chunk_group(TileSums s, const float* xc, const ChunkWeights<W>& wc, int64_t inputs, int64_t nr,
                 int64_t width, const W* ahead = nullptr) {
  const InOutTile<Widen<W>, kChunk> tile{s, xc, kChunk, wc, ahead, inputs / kTile};
  tile_vectors<MR, NV>(tile, nr, width / kLanes);
}

// Copies the chunk's inputs [i0, i0 + inputs) of each row into xc (rows x kChunk): read in
// place, nin floats apart, they held prefill back by 15-40%.
inline void gather_chunk(float* xc, const float* x, int64_t rows, int64_t nin, int64_t i0,
                         int64_t inputs) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < inputs; k += kLanes)
      store(xc + r * kChunk + k, load(x + r * nin + i0 + k));
  }
}

// Starts rows of `width` sums, ldy apart, at the bias's columns bc (or at zero if null).
inline void start_at_bias(float* y, int64_t ldy, const float* bc, int64_t rows, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; c += kLanes)
      store(y + r * ldy + c, bc ? load(bc + c) : f32x16{});
  }
}

// Prefill's register tile from a widened chunk: 6 rows x 4 vectors on AVX-512 (24 of 32
// registers), 6 x 1 on AVX2 (12 of 16: two a vector), 2 x 1 on the generic level.
constexpr int kTileRows = TINYLM_LEVEL == TINYLM_LEVEL_GENERIC ? 2 : 6;
constexpr int kTileVectors = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 4 : 1;

// Prefill of a matrix whose widths are multiples of 16, in either layout: a register-tiled
// product. Threads take groups of 64 output columns; a group runs the rows of the batch, 256
// at a time, chunk by chunk: each chunk's 64 x 64 weights are widened once into an L1 buffer
// and its inputs gathered, and every row block goes through them in register tiles. Each row
// gets the operations that matvec_in_out (decode) gives it, in the same order, so a prompt's
// prefill computes the bits that decoding it token by token does, at any thread count.
template <Layout L, class W>
void matmul_in_out_bands(float* y, const float* x, const W* w, const float* b, int64_t rows,
                         int64_t nin, int64_t nout) {
  constexpr int64_t kGroup = 64, kRowBlock = 256;
  static_assert(kGroup % (kTileVectors * kLanes) == 0);
  for_each_item(
      rows, kRowBlock, nout, kGroup, [&](int64_t r0, int64_t nr, int64_t c0, int64_t width) {
        thread_local AlignedVector<float> scratch;  // grown once, then reused
        scratch.resize(
            static_cast<size_t>(kRowBlock * kGroup + kChunk * kGroup + kRowBlock * kChunk));
        float* acc = scratch.data();           // (nr, kGroup): the bias plus the chunks so far
        float* wc = acc + kRowBlock * kGroup;  // (kChunk, kGroup): the chunk's weights, widened
        float* xc = wc + kChunk * kGroup;      // (nr, kChunk): the chunk's inputs of each row
        start_at_bias(acc, kGroup, b ? b + c0 : nullptr, nr, width);
        for (int64_t i0 = 0; i0 < nin; i0 += kChunk) {
          const int64_t inputs = std::min(kChunk, nin - i0);  // a multiple of 16
          for (int64_t k = 0; k < inputs; ++k) {
            for (int64_t c = 0; c < width; c += kLanes)
              store(wc + k * kGroup + c, load(element<L>(w, nout, i0 + k, c0 + c)));
          }
          // The next chunk's weights are on their way while this one is multiplied: read only
          // when needed, 64 strided rows of them stalled the widening above.
          for (int64_t k = i0 + kChunk; k < std::min(nin, i0 + 2 * kChunk); ++k) {
            for (int64_t c = 0; c < width; c += kTile)
              __builtin_prefetch(element<L>(w, nout, k, c0 + c));
          }
          gather_chunk(xc, x + r0 * nin, nr, nin, i0, inputs);
          const ChunkWeights<float> widened{wc, kTile * kGroup, kGroup, kLanes};
          const TileSums s = i0 + kChunk < nin ? TileSums::in(acc, kGroup)
                                               : TileSums{acc, kGroup, y + r0 * nout + c0, nout};
          chunk_group<kTileRows, kTileVectors>(s, xc, widened, inputs, nr, width);
        }
      });
}

// Few rows (a server's batch): the register tile reads the weights straight from the matrix,
// widening each vector once for all MR rows: 8 rows x 3 vectors on AVX-512 (24 accumulators),
// 6 x 1 on AVX2. With few rows the product is bound by reading the weights, which the
// widening pass of the tiles above only slows. The sums build up in a block of the group's
// own and the last chunk writes y, as in the banded prefill above (tile_sums.h): summed in place,
// y's rows (nout floats apart) evicted one another. The same operations per element as decode, so
// the same bits.
constexpr int64_t kFewRowsMax = 64;
constexpr int64_t kFewRows = TINYLM_LEVEL == TINYLM_LEVEL_GENERIC ? 0 : kFewRowsMax;
constexpr int kFewTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 8 : 6;
constexpr int kFewTileVectors = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 3 : 1;

template <Layout L, class W>
void matmul_in_out_few(float* y, const float* x, const W* w, const float* b, int64_t rows,
                       int64_t nin, int64_t nout) {
  constexpr int64_t kGroup = 2 * kFewTileVectors * kLanes;
  constexpr bool tiles = L == Layout::tiles;
  // Chunks this far ahead of the one in use are prefetched into L2.
  constexpr int64_t kAhead = 1;
  const ChunkWeights<W> matrix = tiles ? ChunkWeights<W>{w, kTile * nout, kTile, kTile * kTile}
                                       : ChunkWeights<W>{w, kTile * nout, nout, kLanes};
  parallel_for_balanced((nout + kGroup - 1) / kGroup, [&](int64_t g) {
    const int64_t c0 = g * kGroup, width = std::min(kGroup, nout - c0);
    thread_local AlignedVector<float> scratch;  // grown once, then reused
    scratch.resize(static_cast<size_t>(kFewRowsMax * kChunk));
    float* xc = scratch.data();  // (rows, kChunk): the chunk's inputs of each row
    alignas(64) float block[kFewRowsMax * kGroup];  // row r's sums so far at block + r * kGroup
    start_at_bias(block, kGroup, b ? b + c0 : nullptr, rows, width);
    for (int64_t i0 = 0; i0 < nin; i0 += kChunk) {
      const int64_t inputs = std::min(kChunk, nin - i0);  // a multiple of 16
      const int64_t ahead = i0 + kAhead * kChunk;
      gather_chunk(xc, x, rows, nin, i0, inputs);
      ChunkWeights<W> wc = matrix;
      wc.w = element<L>(w, nout, i0, c0);
      const TileSums s =
          i0 + kChunk < nin ? TileSums::in(block, kGroup) : TileSums{block, kGroup, y + c0, nout};
      chunk_group<kFewTileRows, kFewTileVectors>(
          s, xc, wc, inputs, rows, width,
          ahead + inputs <= nin ? element<L>(w, nout, ahead, c0) : nullptr);
    }
  });
}

template <class W>
void in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
            int64_t nout, Layout layout) {
  if (layout == Layout::tiles) {
    if (rows <= 2) return matvec_in_out<Layout::tiles>(y, x, w, b, rows, nin, nout);
    if constexpr (kFewRows > 0) {
      if (rows <= kFewRows) return matmul_in_out_few<Layout::tiles>(y, x, w, b, rows, nin, nout);
    }
    return matmul_in_out_bands<Layout::tiles>(y, x, w, b, rows, nin, nout);
  }
  if constexpr (kFewRows > 0) {
    if (rows > 2 && rows <= kFewRows && can_tile(nin, nout))
      return matmul_in_out_few<Layout::rows>(y, x, w, b, rows, nin, nout);
  }
  if (rows > 2 && can_tile(nin, nout))
    return matmul_in_out_bands<Layout::rows>(y, x, w, b, rows, nin, nout);
  matvec_in_out<Layout::rows>(y, x, w, b, rows, nin, nout);
}

// The head over several rows (a server's batch, perplexity's windows): a register tile of MR
// rows x NO outputs, 6 x 4 on AVX-512. (4 x 6, once faster past 16 rows, kept two of its four
// input vectors on the stack as the driver's tile, and measured slower than 6 x 4; an 8 x 2
// tile, which widens each weight vector once, was faster on an Intel Xeon but slower on AMD
// Zen 5: docs/performance-history.md.) On AVX2 1 x 4 (2 x 2 and 1 x 5 measured
// slower). In decode, two rows per pass over four weight rows on AVX-512; one where the
// accumulators (four vectors a row) would not fit beside the weights in 16 registers.
constexpr int kHeadTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 6 : 1;
constexpr int kHeadRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 2 : 1;

// Several rows: items of 256 rows x 64 outputs; each 4-output slice of weights (a few KiB)
// stays in L1 while the block's rows go through it. With few rows the weights stream past as in
// decode: the slice two ahead is prefetched.
template <class W, class Tail>
void out_in_rows(float* y, const float* x, const W* w, int64_t rows, int64_t nin, int64_t nout,
                 int64_t body_end, const Tail& tail) {
  constexpr int64_t kRowBlock = 256, kGroup = 64;
  for_each_item(rows, kRowBlock, nout, kGroup, [&](int64_t r0, int64_t nr, int64_t o0, int64_t n) {
    const OutInTile<Widen<W>, Tail, true> head{
        y + r0 * nout + o0, nout, x + r0 * nin, nin, w + o0 * nin, w, nout - o0,
        body_end / kLanes,  &tail};
    tile_vectors<kHeadTileRows, 4>(head, nr, n);
  });
}

template <class W>
void out_in(float* y, const float* x, const W* w, int64_t rows, int64_t nin, int64_t nout) {
  // The weights are one sequential stream, yet the hardware prefetchers left it at ~50% of the
  // read bandwidth (the 50257-row head at batch 1); prefetching 16 KiB ahead reaches ~95%.
  constexpr int64_t kPrefetchBytes = 16384, kLine = 64;
  const int64_t body_end = nin / kLanes * kLanes;
  const auto tail = [&](const W* wo, const float* xr) {
    float s = 0;
    for (int64_t i = body_end; i < nin; ++i) s = __builtin_fmaf(xr[i], to_float(wo[i]), s);
    return s;
  };
  if (rows > 2) return out_in_rows(y, x, w, rows, nin, nout, body_end, tail);
  // Decode: four outputs a tile, their bytes prefetched a distance ahead.
  const char* bytes = reinterpret_cast<const char*>(w);
  const int64_t row_bytes = nin * static_cast<int64_t>(sizeof(W)), total_bytes = nout * row_bytes;
  const OutInTile<Widen<W>, decltype(tail), false> head{
      y, nout, x, nin, w, w, nout, body_end / kLanes, &tail};
  for_each_four(nout, [&](int64_t o0, int64_t n) {
    const int64_t from = o0 * row_bytes + kPrefetchBytes;
    const int64_t to = std::min(from + n * row_bytes, total_bytes);
    for (int64_t off = from; off < to; off += kLine) __builtin_prefetch(bytes + off);
    const auto four = head.template vectors<4>(o0);
    for (int64_t r = 0; r < rows; ++r) {
      if (n < 4) {
        for (int64_t o = o0; o < o0 + n; ++o)
          register_tile<1, 1>(head.template vectors<1>(o).rows(r));
      } else if (kHeadRows == 2 && r + 1 < rows) {
        register_tile<kHeadRows, 4>(four.rows(r++));
      } else {
        register_tile<1, 4>(four.rows(r));
      }
    }
  });
}

}  // namespace

// The weight types, each with its own entry points (TINYLM_STREAM_TYPES(X) applies X to each).
#define TINYLM_STREAM_TYPES(X) X(float) X(Bf16) X(F16)
#define TINYLM_IN_OUT_SIGNATURE(W)                                                       \
  void matmul_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, \
                     int64_t nin, int64_t nout, Layout layout)
#define TINYLM_OUT_IN_SIGNATURE(W) \
  void matmul_out_in(float* y, const float* x, const W* w, int64_t rows, int64_t nin, int64_t nout)

#define TINYLM_STREAM_PRODUCTS(W)                                             \
  TINYLM_IN_OUT_SIGNATURE(W) { in_out(y, x, w, b, rows, nin, nout, layout); } \
  TINYLM_OUT_IN_SIGNATURE(W) { out_in(y, x, w, rows, nin, nout); }
TINYLM_STREAM_TYPES(TINYLM_STREAM_PRODUCTS)
#undef TINYLM_STREAM_PRODUCTS

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// matmul_in_out checks its layout before it runs the active level's.
#define TINYLM_MATMUL_IN_OUT_ENTRIES(X)                                                   \
  X(TINYLM_IN_OUT_SIGNATURE(float), matmul_in_out, (y, x, w, b, rows, nin, nout, layout)) \
  X(TINYLM_IN_OUT_SIGNATURE(Bf16), matmul_in_out, (y, x, w, b, rows, nin, nout, layout))  \
  X(TINYLM_IN_OUT_SIGNATURE(F16), matmul_in_out, (y, x, w, b, rows, nin, nout, layout))
TINYLM_ACTIVE_ENTRIES(TINYLM_MATMUL_IN_OUT_ENTRIES)

#define TINYLM_MATMUL_OUT_IN_ENTRIES(X)                                        \
  X(TINYLM_OUT_IN_SIGNATURE(float), matmul_out_in, (y, x, w, rows, nin, nout)) \
  X(TINYLM_OUT_IN_SIGNATURE(Bf16), matmul_out_in, (y, x, w, rows, nin, nout))  \
  X(TINYLM_OUT_IN_SIGNATURE(F16), matmul_out_in, (y, x, w, rows, nin, nout))
TINYLM_PUBLIC_ENTRIES(TINYLM_MATMUL_OUT_IN_ENTRIES)

namespace {
// A copy, the same at every level.
template <class W>
void pack(W* dst, const W* src, int64_t nin, int64_t nout) {
  check(can_tile(nin, nout), "pack_tiles: a ", nin, " x ", nout,
        " matrix does not split into 16 x 16 tiles");
  parallel_for(0, nin / kTile, 1, [&](int64_t band) {
    for (int64_t i = band * kTile; i < (band + 1) * kTile; ++i) {
      for (int64_t c = 0; c < nout; c += kTile)
        std::memcpy(element<Layout::tiles>(dst, nout, i, c), src + i * nout + c, kTile * sizeof(W));
    }
  });
}
void check_layout(Layout layout, int64_t nin, int64_t nout) {
  check(layout == Layout::rows || can_tile(nin, nout), "matmul_in_out: a ", nin, " x ", nout,
        " matrix cannot be in tiles");
}
}  // namespace

#define TINYLM_STREAM_CHECKED(W)                                                                  \
  void pack_tiles(W* dst, const W* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); } \
  TINYLM_IN_OUT_SIGNATURE(W) {                                                                    \
    check_layout(layout, nin, nout);                                                              \
    active::matmul_in_out(y, x, w, b, rows, nin, nout, layout);                                   \
  }
TINYLM_STREAM_TYPES(TINYLM_STREAM_CHECKED)
#undef TINYLM_STREAM_CHECKED

}  // namespace tinylm::kernels
#endif
