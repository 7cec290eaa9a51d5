#include "tinylm/kernels/gpt_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {

namespace {
using f32x16 = vec::Vec<float>;
constexpr int64_t kLanes = vec::kLanes<float>;
using vec::hsum;
using vec::store;

// 16 weights widened to float: load16 is overloaded on the storage type so that one kernel
// template serves float, Bf16 and F16 weights.
inline f32x16 load16(const float* p) { return vec::load(p); }
inline f32x16 load16(const Bf16* p) {
#if defined(__AVX512F__)
  // bf16 -> f32 is a 16-bit shift: one widening load and one shift per 16 weights.
  // (The maskz_ forms only because GCC 12 warns that the plain ones read an undefined value.)
  const __m512i wide =
      _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  using u32x16 = uint32_t __attribute__((vector_size(64)));
  return reinterpret_cast<f32x16>(reinterpret_cast<u32x16>(wide) << 16);
#else
  f32x16 v;
  for (int i = 0; i < 16; ++i) v[i] = bf16_to_float(p[i].bits);
  return v;
#endif
}
inline f32x16 load16(const F16* p) {
#if defined(__AVX512F__)
  return reinterpret_cast<f32x16>(
      _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#else
  f32x16 v;
  for (int i = 0; i < 16; ++i) v[i] = to_float(p[i]);
  return v;
#endif
}
// a * b + c, rounded once. Spelled out where two kernels must round alike: left to
// -ffp-contract, GCC fuses either product of x0 * w0 + x2 * w2, and not always the same one.
inline f32x16 fma16(float a, f32x16 b, f32x16 c) {
#if defined(__AVX512F__)
  return std::bit_cast<f32x16>(_mm512_fmadd_ps(std::bit_cast<__m512>(vec::splat(a)),
                                               std::bit_cast<__m512>(b), std::bit_cast<__m512>(c)));
#else
  for (int i = 0; i < 16; ++i) c[i] = std::fma(a, b[i], c[i]);
  return c;
#endif
}

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
// the hardware prefetchers too few lines in flight (bf16 decode of GPT-2 124M, alternating
// generations in one process: +16-26%; 2-8 KiB ahead and into L1 or L3 were no better).
// Row-major matrices are 16 streams per pass, which the prefetchers keep busy enough (+0-2%).
template <int R, Layout L, class W>
inline void accumulate_rows(float* py, const float* x, const W* w, int64_t nout) {
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
    f32x16 even = x[0] * load16(wc), odd = x[1] * load16(wc + kstep);
    for (int k = 2; k < R; k += 2) {
      even = fma16(x[k], load16(wc + k * kstep), even);
      odd = fma16(x[k + 1], load16(wc + (k + 1) * kstep), odd);
    }
    store(py + c, load16(py + c) + (even + odd));
  }
  for (int64_t c = body_end; c < nout; ++c) {  // row-major only: tiles have no ragged columns
    float s = 0;
    for (int k = 0; k < R; ++k) s += x[k] * to_float(w[k * kstep + c]);
    py[c] += s;
  }
}

// Element (i, c) of a Conv1D matrix (nin, nout) stored in layout L.
template <Layout L, class Ptr>
inline Ptr element(Ptr w, int64_t nout, int64_t i, int64_t c) {
  if constexpr (L == Layout::rows) return w + i * nout + c;
  return w + ((i / kTile) * (nout / kTile) + c / kTile) * (kTile * kTile) + (i % kTile) * kTile +
         c % kTile;
}

// Decode (a row or two): memory-bound. The weight rows are cut into chunks of 64 that
// threads take from a ChunkQueue: each thread streams its own contiguous run of rows (where
// splitting columns reached ~40% of the read bandwidth), and a thread that finishes early
// takes chunks from the other's tail instead of waiting for it. Each chunk's product goes to
// its own partial row, 16 weight rows per pass over it (4 rows per pass reached ~60% of the
// bandwidth in bf16, 16 ~80%); the partials are then added in chunk order, so the result is
// the same whichever thread ran which chunk, and at any thread count.
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
        if (cn == kLanes) {
          f32x16 s = b ? load16(b + c0) : f32x16{};
          for (int64_t ck = 0; ck < nchunks; ++ck) s += load16(part + (ck * rows + r) * ld + c0);
          store(y + r * nout + c0, s);
        } else {
          for (int64_t c = c0; c < c0 + cn; ++c) {
            float s = b ? b[c] : 0.0f;
            for (int64_t ck = 0; ck < nchunks; ++ck) s += part[(ck * rows + r) * ld + c];
            y[r * nout + c] = s;
          }
        }
      }
    }
  });
}

// part[r * ldp + 0..15] += x[r * ldx + 0..15] . wt for rows r in [0, NR): accumulate_rows<16>'s
// operations on one 16 x 16 weight tile held in registers. A row is two chains of eight
// dependent FMAs; four rows at a time keep eight chains in flight (1.25x the rate of two).
template <int NR>
inline void tile_rows(float* part, int64_t ldp, const float* x, int64_t ldx,
                      const f32x16 (&wt)[kTile]) {
  f32x16 even[NR], odd[NR];
  for (int r = 0; r < NR; ++r) {
    even[r] = x[r * ldx] * wt[0];
    odd[r] = x[r * ldx + 1] * wt[1];
  }
  for (int k = 2; k < kTile; k += 2) {
    for (int r = 0; r < NR; ++r) {
      even[r] = fma16(x[r * ldx + k], wt[k], even[r]);
      odd[r] = fma16(x[r * ldx + k + 1], wt[k + 1], odd[r]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    float* pr = part + r * ldp;
    store(pr, load16(pr) + (even[r] + odd[r]));
  }
}

// Prefill of a matrix that splits into 16 x 16 tiles, in either layout. Threads take groups
// of 128 output columns from a ChunkQueue; a group runs every row of the batch through one
// weight tile at a time, held in registers, so each weight is read from memory once per
// product. Each row gets the operations that matvec_in_out (decode) gives it, in the same
// order: per 64-row chunk a partial summed band by band, then the partials added to the bias
// in chunk order. A prompt's prefill thus computes the bits that decoding it token by token
// does, at any thread count.
// Measured on GPT-2 124M prefill, alternating in one process: against the register-blocked
// kernel below (which reads a column strip of the weights per block), 1.4-2.2x in f32 and
// 1.3-1.9x in bf16 for prompts of 8-256 tokens. Groups of 128 columns read longer runs of
// each weight row than 64 (f32 +4-17%, bf16 the same; 256 and more gained nothing). Blocks
// of 64 rows keep the partial sums in L1 on long prompts (1024 rows: 1.3-2.2x on the
// products). Threads streaming whole 64-row chunks instead (decode's split, a partial per
// chunk) measured no faster.
template <Layout L, class W>
void matmul_in_out_bands(float* y, const float* x, const W* w, const float* b, int64_t rows,
                         int64_t nin, int64_t nout) {
  constexpr int64_t kGroup = 128, kRowBlock = 64;
  // The group's tile two bands ahead is prefetched while this one is used: a band of a group
  // is too little work to hide a read from memory (one to four bands ahead measured alike).
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
        store(acc + r * kGroup + c, b ? load16(b + c0 + c) : f32x16{});
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
          for (int k = 0; k < kTile; ++k) wt[k] = load16(element<L>(w, nout, i + k, c0 + c));
          if (i + kAheadRows < nin) {
            for (int k = 0; k < kTile; ++k)
              __builtin_prefetch(element<L>(w, nout, i + kAheadRows + k, c0 + c));
          }
          int64_t r = 0;
          for (; r + 4 <= nr; r += 4)
            tile_rows<4>(part + r * kGroup + c, kGroup, xc + r * kTile, kTile, wt);
          for (; r < nr; ++r)
            tile_rows<1>(part + r * kGroup + c, kGroup, xc + r * kTile, kTile, wt);
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        for (int64_t c = 0; c < width; c += kLanes) {
          float* ar = acc + r * kGroup + c;
          store(ar, load16(ar) + load16(part + r * kGroup + c));
        }
      }
    }
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t c = 0; c < width; c += kLanes)
        store(y + (r0 + r) * nout + c0 + c, load16(acc + r * kGroup + c));
    }
  });
}

// Prefill of a row-major matrix that does not split into tiles (widths that are not multiples
// of 16): columns in blocks of 64 (four 16-wide vectors), rows in blocks of 6, so that 24
// accumulators stay in registers while the block's weights (nin x 64, kept in L2 for the
// following row blocks) stream past.
template <class W>
void matmul_in_out_blocked(float* y, const float* x, const W* w, const float* b, int64_t rows,
                           int64_t nin, int64_t nout) {
  constexpr int64_t kCols = 64, kRows = 6;
  const int64_t nblocks = (nout + kCols - 1) / kCols;
  parallel_for(0, nblocks, 1, [&](int64_t blk) {
    const int64_t c0 = blk * kCols;
    const int64_t width = std::min(kCols, nout - c0);
    if (width < kCols) {  // ragged last block: plain loops
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = c0; c < nout; ++c) {
          float acc = b ? b[c] : 0.0f;
          for (int64_t i = 0; i < nin; ++i) acc += x[r * nin + i] * to_float(w[i * nout + c]);
          y[r * nout + c] = acc;
        }
      }
      return;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      const int64_t nr = std::min(kRows, rows - r0);
      f32x16 acc[kRows][4];
      for (int64_t r = 0; r < kRows; ++r) {
        for (int v = 0; v < 4; ++v) acc[r][v] = b ? load16(b + c0 + 16 * v) : f32x16{};
      }
      for (int64_t i = 0; i < nin; ++i) {
        const W* wi = w + i * nout + c0;
        const f32x16 w0 = load16(wi), w1 = load16(wi + kLanes), w2 = load16(wi + 2 * kLanes),
                     w3 = load16(wi + 3 * kLanes);
        for (int64_t r = 0; r < nr; ++r) {
          const float xv = x[(r0 + r) * nin + i];
          acc[r][0] += xv * w0;
          acc[r][1] += xv * w1;
          acc[r][2] += xv * w2;
          acc[r][3] += xv * w3;
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        for (int v = 0; v < 4; ++v) store(y + (r0 + r) * nout + c0 + 16 * v, acc[r][v]);
      }
    }
  });
}

}  // namespace

void layernorm_forward(float* y, const float* x, const float* w, const float* b, int64_t rows,
                       int64_t C, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    double mean = 0;
    for (int64_t i = 0; i < C; ++i) mean += xr[i];
    mean /= static_cast<double>(C);
    double var = 0;
    for (int64_t i = 0; i < C; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(C);
    const float m = static_cast<float>(mean);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (int64_t i = 0; i < C; ++i) yr[i] = (xr[i] - m) * rstd * w[i] + b[i];
  }
}

template <class W>
void pack_tiles(W* dst, const W* src, int64_t nin, int64_t nout) {
  check(can_tile(nin, nout), "pack_tiles: a ", nin, " x ", nout,
        " matrix does not split into 16 x 16 tiles");
  parallel_for(0, nin / kTile, 1, [&](int64_t band) {
    for (int64_t i = band * kTile; i < (band + 1) * kTile; ++i) {
      for (int64_t c = 0; c < nout; c += kTile) {
        std::memcpy(element<Layout::tiles>(dst, nout, i, c), src + i * nout + c, kTile * sizeof(W));
      }
    }
  });
}

template <class W>
void matmul_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
                   int64_t nout, Layout layout) {
  if (layout == Layout::tiles) {
    check(can_tile(nin, nout), "matmul_in_out: a ", nin, " x ", nout, " matrix cannot be in tiles");
    if (rows <= 2) return matvec_in_out<Layout::tiles>(y, x, w, b, rows, nin, nout);
    return matmul_in_out_bands<Layout::tiles>(y, x, w, b, rows, nin, nout);
  }
  if (rows <= 2) return matvec_in_out<Layout::rows>(y, x, w, b, rows, nin, nout);
  if (can_tile(nin, nout)) return matmul_in_out_bands<Layout::rows>(y, x, w, b, rows, nin, nout);
  matmul_in_out_blocked(y, x, w, b, rows, nin, nout);
}

// y[r * ldy + o] = x[r] . W[o] for o < 4 and rows r < NR: four weight rows loaded once per
// vector for NR input rows (every row gets the sums it gets alone). Four accumulator chains
// per row keep the FMA units busy.
template <int NR, class W, class Tail>
inline void four_outputs(float* y, int64_t ldy, const float* x, int64_t nin, const W* w,
                         int64_t body_end, const Tail& tail) {
  f32x16 a[NR][4] = {};
  for (int64_t i = 0; i < body_end; i += kLanes) {
    const f32x16 w0 = load16(w + i), w1 = load16(w + nin + i), w2 = load16(w + 2 * nin + i),
                 w3 = load16(w + 3 * nin + i);
    for (int j = 0; j < NR; ++j) {
      const f32x16 xv = load16(x + j * nin + i);
      a[j][0] += xv * w0;
      a[j][1] += xv * w1;
      a[j][2] += xv * w2;
      a[j][3] += xv * w3;
    }
  }
  for (int j = 0; j < NR; ++j) {
    for (int o = 0; o < 4; ++o) y[j * ldy + o] = hsum(a[j][o]) + tail(w + o * nin, x + j * nin);
  }
}

template <class W>
void matmul_out_in(float* y, const float* x, const W* w, int64_t rows, int64_t nin, int64_t nout) {
  // Four outputs (four consecutive weight rows) at a time: four independent accumulator
  // chains keep the FMA units busy. The weights are one sequential stream, yet the hardware
  // prefetchers left it at ~50% of the read bandwidth (the 50257-row head at batch 1);
  // prefetching 16 KiB ahead in software reaches ~95%.
  constexpr int64_t kPrefetchBytes = 16384, kLine = 64;
  const int64_t body_end = nin / kLanes * kLanes;
  const auto tail = [&](const W* wo, const float* xr) {
    float s = 0;
    for (int64_t i = body_end; i < nin; ++i) s += xr[i] * to_float(wo[i]);
    return s;
  };
  const char* bytes = reinterpret_cast<const char*>(w);
  const int64_t row_bytes = nin * static_cast<int64_t>(sizeof(W)), total_bytes = nout * row_bytes;
  // Outputs 4 blk .. 4 blk + 3 for rows [r0, r1), two rows at a time where there are two.
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
            acc += load16(xr + i) * load16(w + o * nin + i);
          y[r * nout + o] = hsum(acc) + tail(w + o * nin, xr);
        }
        continue;
      }
      if (r + 1 < r1) {
        four_outputs<2>(y + r * nout + o0, nout, xr, nin, w0, body_end, tail);
        ++r;
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

template <class KV>
void attention_cached(float* out, const float* q, const KV* k_cache, const KV* v_cache, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head) {
  const int64_t hd = C / n_head;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Heads of up to 256 channels in multiples of 16 keep their output row in registers.
  constexpr int64_t kMaxVec = 16;
  const bool vectorized = hd % kLanes == 0 && hd / kLanes <= kMaxVec;
  const int64_t nv = hd / kLanes;
  parallel_for(0, n_head, 1, [&](int64_t h) {
    // Per-thread scratch, grown once: no allocation per head per token.
    thread_local std::vector<float> att;
    if (att.size() < static_cast<size_t>(t1)) att.resize(static_cast<size_t>(t1));
    for (int64_t t = t0; t < t1; ++t) {
      const float* qt = q + (t - t0) * C + h * hd;
      float* ot = out + (t - t0) * C + h * hd;
      float mx = -INFINITY;
      for (int64_t s = 0; s <= t; ++s) {
        const KV* ks = k_cache + s * C + h * hd;
        float dot = 0;
        if (vectorized) {
          f32x16 acc{};
          for (int64_t v = 0; v < nv; ++v) acc += load16(qt + kLanes * v) * load16(ks + kLanes * v);
          dot = hsum(acc);
        } else {
          for (int64_t j = 0; j < hd; ++j) dot += qt[j] * to_float(ks[j]);
        }
        att[s] = dot * scale;
        mx = std::max(mx, att[s]);
      }
      float sum = 0;
      for (int64_t s = 0; s <= t; ++s) sum += att[s] = std::exp(att[s] - mx);
      const float inv = 1.0f / sum;
      if (vectorized) {
        f32x16 acc[kMaxVec] = {};
        for (int64_t s = 0; s <= t; ++s) {
          const float a = att[s] * inv;
          const KV* vs = v_cache + s * C + h * hd;
          for (int64_t v = 0; v < nv; ++v) acc[v] += a * load16(vs + kLanes * v);
        }
        for (int64_t v = 0; v < nv; ++v) store(ot + kLanes * v, acc[v]);
        continue;
      }
      for (int64_t j = 0; j < hd; ++j) ot[j] = 0;
      for (int64_t s = 0; s <= t; ++s) {
        const float a = att[s] * inv;
        const KV* vs = v_cache + s * C + h * hd;
        for (int64_t j = 0; j < hd; ++j) ot[j] += a * to_float(vs[j]);
      }
    }
  });
}

template void pack_tiles<float>(float*, const float*, int64_t, int64_t);
template void pack_tiles<Bf16>(Bf16*, const Bf16*, int64_t, int64_t);
template void pack_tiles<F16>(F16*, const F16*, int64_t, int64_t);
template void matmul_in_out<float>(float*, const float*, const float*, const float*, int64_t,
                                   int64_t, int64_t, Layout);
template void matmul_in_out<Bf16>(float*, const float*, const Bf16*, const float*, int64_t, int64_t,
                                  int64_t, Layout);
template void matmul_in_out<F16>(float*, const float*, const F16*, const float*, int64_t, int64_t,
                                 int64_t, Layout);
template void matmul_out_in<float>(float*, const float*, const float*, int64_t, int64_t, int64_t);
template void matmul_out_in<Bf16>(float*, const float*, const Bf16*, int64_t, int64_t, int64_t);
template void matmul_out_in<F16>(float*, const float*, const F16*, int64_t, int64_t, int64_t);
template void attention_cached<float>(float*, const float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void attention_cached<Bf16>(float*, const float*, const Bf16*, const Bf16*, int64_t, int64_t, int64_t, int64_t);
template void attention_cached<F16>(float*, const float*, const F16*, const F16*, int64_t, int64_t, int64_t, int64_t);

}  // namespace tinylm::kernels
