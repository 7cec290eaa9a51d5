#include "tinylm/kernels/matmul/stream.h"

#include <algorithm>
#include <cstring>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Conv1D products sum their inputs in chunks of 64 weight rows (a partial per chunk, the
// partials then added in chunk order): decode and prefill alike, so they round alike.
constexpr int64_t kChunk = 64;

// py[c] += sum over k < R of x[k] * W(k, c) for c in [0, nout): R weight rows in one pass
// over the partial sums, so those are loaded and stored once per R rows. Two independent FMA
// chains (even and odd rows) keep the chain latency off the critical path. The 16 weights
// W(k, c..c+15), c a multiple of 16, sit at w + k * nout + c in Layout::rows, or at
// w + k * 16 + c * 16 in one 16-row band of Layout::tiles, which is then read as one
// sequential stream; the same products in the same order either way.
//
// Vectors always start at column 0, not at the weights' first 64-byte boundary: memory-mapped
// f32 weights sit wherever the file put them, and peeling columns to align the loads would
// make the rounding depend on that address. (Our own files and owned weights are aligned.)
//
// The tiled stream is prefetched 4 KiB ahead into L2: on its own, one stream per core left
// the hardware prefetchers too few lines in flight (docs/performance.md). Row-major matrices
// are 16 streams per pass, which the prefetchers keep busy enough.
template <int R, Layout L, class W>
TINYLM_INLINE void accumulate_rows(float* py, const float* x, const W* w, int64_t nout) {
  constexpr bool tiles = L == Layout::tiles;
  static_assert(R % 2 == 0 && (!tiles || R == kTile));
  // Compile-time steps for tiles: the loads then take immediate offsets.
  const int64_t kstep = tiles ? kTile : nout;
  constexpr int64_t VStep = tiles ? kTile * kTile : kLanes;
  constexpr int64_t kAhead = 4096, kLine = 64;
  const int64_t body_end = nout / kLanes * kLanes;
  const W* wc = w;
  for (int64_t c = 0; c < body_end; c += kLanes, wc += VStep) {
    if constexpr (tiles) {
      const char* ahead = reinterpret_cast<const char*>(wc) + kAhead;
      for (size_t b = 0; b < VStep * sizeof(W); b += kLine) __builtin_prefetch(ahead + b, 0, 2);
    }
    f32x16 even = x[0] * load(wc), odd = x[1] * load(wc + kstep);
    for (int k = 2; k < R; k += 2) {
      even = fma(x[k], load(wc + k * kstep), even);
      odd = fma(x[k + 1], load(wc + (k + 1) * kstep), odd);
    }
    store(py + c, load(py + c) + (even + odd));
  }
  for (int64_t c = body_end; c < nout; ++c) {  // row-major only: tiles have no ragged columns
    float even = x[0] * to_float(w[c]), odd = x[1] * to_float(w[kstep + c]);
    for (int k = 2; k < R; k += 2) {
      even = __builtin_fmaf(x[k], to_float(w[k * kstep + c]), even);
      odd = __builtin_fmaf(x[k + 1], to_float(w[(k + 1) * kstep + c]), odd);
    }
    py[c] += even + odd;
  }
}

// Element (i, c) of a Conv1D matrix (nin, nout) stored in layout L.
template <Layout L, class Ptr>
TINYLM_INLINE Ptr element(Ptr w, int64_t nout, int64_t i, int64_t c) {
  if constexpr (L == Layout::rows) return w + i * nout + c;
  return w + ((i / kTile) * (nout / kTile) + c / kTile) * (kTile * kTile) + (i % kTile) * kTile +
         c % kTile;
}

// Decode (a row or two), and every row of matrices that do not split into tiles:
// memory-bound. The weight rows are cut into chunks of 64 that threads take from a
// ChunkQueue: each thread streams its own contiguous run of rows, and a thread that finishes
// early takes chunks from the other's tail instead of waiting for it. Each chunk's product
// goes to its own partial row, 16 weight rows per pass over it; the partials are then added
// in chunk order, so the result is the same whichever thread ran which chunk, and at any
// thread count.
template <Layout L, class W>
void matvec_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
                   int64_t nout) {
  constexpr int kPass = 16;
  static_assert(kPass == kTile);
  const int64_t nchunks = (nin + kChunk - 1) / kChunk;
  const int64_t ld = round_up(nout, kLanes);  // partial rows on 64-byte boundaries
  thread_local AlignedVector<float> scratch;  // grown once, then reused every token
  scratch.resize(static_cast<size_t>(nchunks * rows * ld));
  float* part = scratch.data();
  const int nthreads = region_threads(nchunks);
  ChunkQueue queue(nchunks, nthreads);
  const int64_t nblk = ld / kLanes;
  parallel_region(nthreads, [&](int me, int team) {
    for (;;) {
      const int64_t ck = queue.next(me);
      if (ck < 0) break;
      const int64_t i0 = ck * kChunk, i1 = std::min(nin, i0 + kChunk);
      float* pc = part + ck * rows * ld;
      std::fill(pc, pc + rows * ld, 0.0f);
      for (int64_t r = 0; r < rows; ++r) {
        float* py = pc + r * ld;
        const float* xr = x + r * nin;
        int64_t i = i0;
        for (; i + kPass <= i1; i += kPass)
          accumulate_rows<kPass, L>(py, xr + i, w + i * nout, nout);
        if constexpr (L == Layout::rows) {  // (tiled matrices have whole bands only)
          for (; i + 2 <= i1; i += 2) accumulate_rows<2, L>(py, xr + i, w + i * nout, nout);
          for (; i < i1; ++i) {
            for (int64_t c = 0; c < nout; ++c) py[c] += xr[i] * to_float(w[i * nout + c]);
          }
        }
      }
    }
    barrier();  // then each thread adds up its share of the columns
    for (int64_t blk = nblk * me / team; blk < nblk * (me + 1) / team; ++blk) {
      const int64_t c0 = blk * kLanes, cn = std::min<int64_t>(kLanes, nout - c0);
      for (int64_t r = 0; r < rows; ++r) {
        f32x16 s = b ? load_n(b + c0, cn) : f32x16{};
        for (int64_t ck = 0; ck < nchunks; ++ck) s += load(part + (ck * rows + r) * ld + c0);
        store_n(y + r * nout + c0, s, cn);
      }
    }
  });
}

// Rows of one 16 x 16 weight tile run through at a time in prefill: AVX-512 holds the tile in
// 16 of its 32 registers with four rows' two chains beside it; AVX2 has 16 registers for
// everything, so three rows' chains (12) and the tile's vectors one at a time from L1.
constexpr int kTileRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 4 : TINYLM_LEVEL == TINYLM_LEVEL_AVX2 ? 3 : 1;

// part[r * ldp + 0..15] += x[r * ldx + 0..15] . wt for rows r in [0, NR): accumulate_rows<16>'s
// operations on one 16 x 16 weight tile. A row is two chains of eight dependent FMAs.
template <int NR>
TINYLM_INLINE void tile_rows(float* part, int64_t ldp, const float* x, int64_t ldx,
                             const f32x16 (&wt)[kTile]) {
  f32x16 even[NR], odd[NR];
  for (int r = 0; r < NR; ++r) {
    even[r] = x[r * ldx] * wt[0];
    odd[r] = x[r * ldx + 1] * wt[1];
  }
  for (int k = 2; k < kTile; k += 2) {
    for (int r = 0; r < NR; ++r) {
      even[r] = fma(x[r * ldx + k], wt[k], even[r]);
      odd[r] = fma(x[r * ldx + k + 1], wt[k + 1], odd[r]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    float* pr = part + r * ldp;
    store(pr, load(pr) + (even[r] + odd[r]));
  }
}

// Prefill of a matrix that splits into 16 x 16 tiles, in either layout. Threads take groups
// of 128 output columns from a ChunkQueue; a group runs every row of the batch through one
// weight tile at a time, so each weight is read from memory once per product. Each row gets
// the operations that matvec_in_out (decode) gives it, in the same order: per 64-row chunk a
// partial summed band by band, then the partials added to the bias in chunk order. A
// prompt's prefill thus computes the bits that decoding it token by token does, at any
// thread count. Blocks of 64 rows keep the partial sums in L1 on long prompts.
template <Layout L, class W>
void matmul_in_out_bands(float* y, const float* x, const W* w, const float* b, int64_t rows,
                         int64_t nin, int64_t nout) {
  constexpr int64_t kGroup = 128, kRowBlock = 64;
  // The group's tile two bands ahead is prefetched while this one is used: a band of a group
  // is too little work to hide a read from memory.
  constexpr int64_t kAheadRows = 2 * kTile;
  const int64_t nrb = (rows + kRowBlock - 1) / kRowBlock;
  // Work items: a group's row blocks one after another, so a thread walking its share
  // reuses the group's weights from L2 for each block of rows.
  parallel_for_balanced((nout + kGroup - 1) / kGroup * nrb, [&](int64_t item) {
    const int64_t c0 = item / nrb * kGroup, width = std::min(kGroup, nout - c0);
    const int64_t r0 = item % nrb * kRowBlock, nr = std::min(kRowBlock, rows - r0);
    const float* xb = x + r0 * nin;
    thread_local AlignedVector<float> scratch;  // grown once, then reused
    scratch.resize(static_cast<size_t>(2 * kRowBlock * kGroup));
    float* acc = scratch.data();             // (nr, kGroup): the bias plus the chunks so far
    float* part = acc + kRowBlock * kGroup;  // (nr, kGroup): this chunk's partial
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t c = 0; c < width; c += kLanes)
        store(acc + r * kGroup + c, b ? load(b + c0 + c) : f32x16{});
    }
    for (int64_t i0 = 0; i0 < nin; i0 += kChunk) {
      std::fill(part, part + nr * kGroup, 0.0f);
      for (int64_t i = i0; i < std::min(nin, i0 + kChunk); i += kTile) {
        // The band's 16 inputs of each row, gathered into one contiguous block: read in place,
        // nin floats apart, they held prefill back by 15-40%.
        alignas(64) float xc[kRowBlock * kTile];
        for (int64_t r = 0; r < nr; ++r)
          std::memcpy(xc + r * kTile, xb + r * nin + i, kTile * sizeof(float));
        for (int64_t c = 0; c < width; c += kTile) {
          f32x16 wt[kTile];
          for (int k = 0; k < kTile; ++k) wt[k] = load(element<L>(w, nout, i + k, c0 + c));
          if (i + kAheadRows < nin) {
            for (int k = 0; k < kTile; ++k)
              __builtin_prefetch(element<L>(w, nout, i + kAheadRows + k, c0 + c));
          }
          int64_t r = 0;
          for (; r + kTileRows <= nr; r += kTileRows)
            tile_rows<kTileRows>(part + r * kGroup + c, kGroup, xc + r * kTile, kTile, wt);
          for (; r < nr; ++r) tile_rows<1>(part + r * kGroup + c, kGroup, xc + r * kTile, kTile, wt);
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        for (int64_t c = 0; c < width; c += kLanes) {
          float* ar = acc + r * kGroup + c;
          store(ar, load(ar) + load(part + r * kGroup + c));
        }
      }
    }
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t c = 0; c < width; c += kLanes)
        store(y + (r0 + r) * nout + c0 + c, load(acc + r * kGroup + c));
    }
  });
}

template <class W>
void in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
            int64_t nout, Layout layout) {
  if (layout == Layout::tiles) {
    if (rows <= 2) return matvec_in_out<Layout::tiles>(y, x, w, b, rows, nin, nout);
    return matmul_in_out_bands<Layout::tiles>(y, x, w, b, rows, nin, nout);
  }
  if (rows > 2 && can_tile(nin, nout)) return matmul_in_out_bands<Layout::rows>(y, x, w, b, rows, nin, nout);
  matvec_in_out<Layout::rows>(y, x, w, b, rows, nin, nout);
}

// Rows of the head per pass over four of its weight rows: two on AVX-512; one where the
// accumulators (four vectors a row) would not fit beside the weights in 16 registers.
constexpr int kHeadRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 2 : 1;

// y[r * ldy + o] = x[r] . W[o] for o < 4 and rows r < NR: four weight rows read once per
// vector for NR input rows (every row gets the sums it gets alone). Four accumulator chains
// per row keep the FMA units busy.
template <int NR, class W, class Tail>
TINYLM_INLINE void four_outputs(float* y, int64_t ldy, const float* x, int64_t nin, const W* w,
                                int64_t body_end, const Tail& tail) {
  f32x16 a[NR][4];
  for (int j = 0; j < NR; ++j) {
    for (int o = 0; o < 4; ++o) a[j][o] = f32x16{};
  }
  for (int64_t i = 0; i < body_end; i += kLanes) {
    for (int o = 0; o < 4; ++o) {
      const f32x16 wo = load(w + o * nin + i);
      for (int j = 0; j < NR; ++j) a[j][o] = fma(load(x + j * nin + i), wo, a[j][o]);
    }
  }
  for (int j = 0; j < NR; ++j) {
    for (int o = 0; o < 4; ++o) y[j * ldy + o] = hsum(a[j][o]) + tail(w + o * nin, x + j * nin);
  }
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
  const char* bytes = reinterpret_cast<const char*>(w);
  const int64_t row_bytes = nin * static_cast<int64_t>(sizeof(W)), total_bytes = nout * row_bytes;
  // Outputs 4 blk .. 4 blk + 3 for rows [r0, r1).
  const auto block = [&](int64_t blk, int64_t r0, int64_t r1) {
    const int64_t o0 = blk * 4, n = std::min<int64_t>(4, nout - o0);
    const W* w0 = w + o0 * nin;
    if (r0 == 0) {  // this block's bytes a prefetch distance ahead (within the array)
      const int64_t from = o0 * row_bytes + kPrefetchBytes;
      const int64_t to = std::min(from + n * row_bytes, total_bytes);
      for (int64_t off = from; off < to; off += kLine) __builtin_prefetch(bytes + off);
    }
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * nin;
      if (n < 4) {
        for (int64_t o = o0; o < o0 + n; ++o) {
          f32x16 acc{};
          for (int64_t i = 0; i < body_end; i += kLanes)
            acc = fma(load(xr + i), load(w + o * nin + i), acc);
          y[r * nout + o] = hsum(acc) + tail(w + o * nin, xr);
        }
        continue;
      }
      if (kHeadRows == 2 && r + 1 < r1) {
        four_outputs<kHeadRows>(y + r * nout + o0, nout, xr, nin, w0, body_end, tail);
        r += kHeadRows - 1;
      } else {
        four_outputs<1>(y + r * nout + o0, nout, xr, nin, w0, body_end, tail);
      }
    }
  };
  // Groups of 64 outputs from a ChunkQueue: one sequential stream per thread, and no
  // waiting for the slower thread at the end. Each output has one thread, so any schedule
  // gives the same result. Many rows (perplexity's windows) go through a group in blocks of
  // 64, which keeps the rows' inputs and the group's weights in L2.
  constexpr int64_t kGroup = 16, kRowBlock = 64;
  const int64_t nblk = (nout + 3) / 4;
  parallel_for_balanced((nblk + kGroup - 1) / kGroup, [&](int64_t g) {
    for (int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
      for (int64_t blk = g * kGroup; blk < std::min(nblk, (g + 1) * kGroup); ++blk)
        block(blk, r0, std::min(rows, r0 + kRowBlock));
    }
  });
}

template <class W>
void pack(W* dst, const W* src, int64_t nin, int64_t nout) {
  parallel_for(0, nin / kTile, 1, [&](int64_t band) {
    for (int64_t i = band * kTile; i < (band + 1) * kTile; ++i) {
      for (int64_t c = 0; c < nout; c += kTile) {
        std::memcpy(element<Layout::tiles>(dst, nout, i, c), src + i * nout + c, kTile * sizeof(W));
      }
    }
  });
}

}  // namespace

void pack_tiles(float* dst, const float* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); }
void pack_tiles(Bf16* dst, const Bf16* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); }
void pack_tiles(F16* dst, const F16* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); }
void matmul_in_out(float* y, const float* x, const float* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout) {
  in_out(y, x, w, b, rows, nin, nout, layout);
}
void matmul_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout) {
  in_out(y, x, w, b, rows, nin, nout, layout);
}
void matmul_in_out(float* y, const float* x, const F16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout) {
  in_out(y, x, w, b, rows, nin, nout, layout);
}
void matmul_out_in(float* y, const float* x, const float* w, int64_t rows, int64_t nin, int64_t nout) {
  out_in(y, x, w, rows, nin, nout);
}
void matmul_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin, int64_t nout) {
  out_in(y, x, w, rows, nin, nout);
}
void matmul_out_in(float* y, const float* x, const F16* w, int64_t rows, int64_t nin, int64_t nout) {
  out_in(y, x, w, rows, nin, nout);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

TINYLM_LEVELS(
    void pack_tiles(float* dst, const float* src, int64_t nin, int64_t nout);
    void pack_tiles(Bf16* dst, const Bf16* src, int64_t nin, int64_t nout);
    void pack_tiles(F16* dst, const F16* src, int64_t nin, int64_t nout);
    void matmul_in_out(float* y, const float* x, const float* w, const float* b, int64_t rows,
                       int64_t nin, int64_t nout, Layout layout);
    void matmul_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                       int64_t nin, int64_t nout, Layout layout);
    void matmul_in_out(float* y, const float* x, const F16* w, const float* b, int64_t rows,
                       int64_t nin, int64_t nout, Layout layout);
    void matmul_out_in(float* y, const float* x, const float* w, int64_t rows, int64_t nin,
                       int64_t nout);
    void matmul_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                       int64_t nout);
    void matmul_out_in(float* y, const float* x, const F16* w, int64_t rows, int64_t nin,
                       int64_t nout))

namespace {
template <class W>
void pack(W* dst, const W* src, int64_t nin, int64_t nout) {
  check(can_tile(nin, nout), "pack_tiles: a ", nin, " x ", nout,
        " matrix does not split into 16 x 16 tiles");
  TINYLM_DISPATCH(pack_tiles, dst, src, nin, nout);
}
void check_layout(Layout layout, int64_t nin, int64_t nout) {
  check(layout == Layout::rows || can_tile(nin, nout), "matmul_in_out: a ", nin, " x ", nout,
        " matrix cannot be in tiles");
}
}  // namespace

void pack_tiles(float* dst, const float* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); }
void pack_tiles(Bf16* dst, const Bf16* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); }
void pack_tiles(F16* dst, const F16* src, int64_t nin, int64_t nout) { pack(dst, src, nin, nout); }

void matmul_in_out(float* y, const float* x, const float* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout) {
  check_layout(layout, nin, nout);
  TINYLM_DISPATCH(matmul_in_out, y, x, w, b, rows, nin, nout, layout);
}
void matmul_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout) {
  check_layout(layout, nin, nout);
  TINYLM_DISPATCH(matmul_in_out, y, x, w, b, rows, nin, nout, layout);
}
void matmul_in_out(float* y, const float* x, const F16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout) {
  check_layout(layout, nin, nout);
  TINYLM_DISPATCH(matmul_in_out, y, x, w, b, rows, nin, nout, layout);
}
void matmul_out_in(float* y, const float* x, const float* w, int64_t rows, int64_t nin, int64_t nout) {
  TINYLM_DISPATCH(matmul_out_in, y, x, w, rows, nin, nout);
}
void matmul_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin, int64_t nout) {
  TINYLM_DISPATCH(matmul_out_in, y, x, w, rows, nin, nout);
}
void matmul_out_in(float* y, const float* x, const F16* w, int64_t rows, int64_t nin, int64_t nout) {
  TINYLM_DISPATCH(matmul_out_in, y, x, w, rows, nin, nout);
}

}  // namespace tinylm::kernels
#endif
