// (No include guard: a source includes it once in each level region it compiles.)
// The streamed-product driver: the skeleton every product of activation rows with a weight
// matrix read from memory shares (matmul/stream.cpp, matmul/bf16_dot.cpp, quant/matmul.cpp,
// quant/int_matmul.cpp). It owns
//   - decode's chunk queue: the inputs cut into chunks that threads take from a ChunkQueue, each
//     chunk's chains into a partial row of its own, the partials added up in chunk order (in-out
//     products); the outputs in groups that threads take, four at a time (out-in products);
//   - prefill's work items: (a block of rows) x (a group of columns), row blocks outermost;
//   - the register tile: MR rows x NV weight vectors of accumulators, and the loops that walk a
//     block's rows MR at a time (the last few through a smaller tile) and its columns NV at a
//     time.
// A format (f32/bf16/f16 widening, dequantized blocks, bf16 pairs) is a small policy the tile
// calls for its operands; the order of each output's operations is the policy's, so the driver
// changes no bits.
//
// Include it inside a level region (after TINYLM_LEVEL_BEGIN, or in bf16_dot.cpp's avx512bf16
// region): its templates take that region's target, so a policy's intrinsics inline into them.
// The includer includes first: <algorithm>, <type_traits>, core/aligned_vector.h,
// core/parallel.h, kernels/cpu/vec.h, matmul/stream.h (kTile) and matmul/tile_sums.h.
#if !defined(TINYLM_LEVEL_NS)
#error "stream_driver.h belongs inside a level region"
#endif

namespace {

// Inputs per chunk of the in-out products' chains.
constexpr int64_t kChunk = 64;

// Decode: y (rows, nout) = the bias (or zero) plus the chunks' partial sums, added in chunk
// order. chunk(ck, part, ld) writes chunk ck's chains of every row, from zero, to part (rows of
// ld floats). Threads take the chunks from a ChunkQueue: each streams its own contiguous run of
// the matrix, and one that finishes early takes chunks from the other's tail instead of waiting.
// The result is the same whichever thread ran which chunk, at any thread count.
template <class Chunk>
void sum_chunks(float* y, const float* b, int64_t rows, int64_t nin, int64_t nout,
                const Chunk& chunk) {
  const int64_t nchunks = (nin + kChunk - 1) / kChunk;
  const int64_t ld = (nout + kLanes - 1) / kLanes * kLanes;  // rows on 64-byte boundaries
  thread_local AlignedVector<float> scratch;                 // grown once, then reused every token
  scratch.resize(static_cast<size_t>(nchunks * rows * ld));
  float* part = scratch.data();
  const int nthreads = region_threads(nchunks);
  ChunkQueue queue(nchunks, nthreads);
  const int64_t nblk = ld / kLanes;
  parallel_region(nthreads, [&](int me, int team) {
    for (int64_t ck; (ck = queue.next(me)) >= 0;) chunk(ck, part + ck * rows * ld, ld);
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

// Prefill: fn(r0, nr, c0, width) for every item of up to row_block rows x `group` columns of
// ncols, on threads from a ChunkQueue. An item's row block outermost: a thread walking its
// share keeps the block's inputs in L2 while the weights stream past.
template <class Fn>
void for_each_item(int64_t rows, int64_t row_block, int64_t ncols, int64_t group, const Fn& fn) {
  const int64_t ngroups = (ncols + group - 1) / group;
  parallel_for_balanced((rows + row_block - 1) / row_block * ngroups, [&](int64_t item) {
    const int64_t c0 = item % ngroups * group, width = std::min(group, ncols - c0);
    const int64_t r0 = item / ngroups * row_block, nr = std::min(row_block, rows - r0);
    fn(r0, nr, c0, width);
  });
}

// Decode of out-in products (a head, quantized rows): fn(o0, n) for outputs o0 .. o0 + n - 1,
// n = 4 but at the end, in groups of 64 outputs that threads take from a ChunkQueue: one
// sequential stream per thread, and no waiting for the slower thread at the end. Each output
// has one thread, so any schedule gives the same result.
template <class Fn>
void for_each_four(int64_t nout, const Fn& fn) {
  constexpr int64_t kGroup = 64;
  parallel_for_balanced((nout + kGroup - 1) / kGroup, [&](int64_t g) {
    for (int64_t o0 = g * kGroup; o0 < std::min(nout, (g + 1) * kGroup); o0 += 4)
      fn(o0, std::min<int64_t>(4, nout - o0));
  });
}

// The register tile: acc[r][v] for MR rows and NV weight vectors (columns of in-out products,
// outputs of out-in ones) starts at p.start(r, v); per step (b, k), b < p.steps and
// k < P::kInner, each weight vector is loaded once and each row's input once, for MR NV
// products acc = F::madd(acc, input, weight) in P::Format F; then p.finish(r, acc[r]) stores
// each row.
// P::kInputsFirst loads the MR inputs (vectors) before the weights; otherwise each input
// (a broadcast) is made as its row's products need it. p.prefetch(b, k, v) is issued with
// weight v's load. The loops are fully unrolled, so the accumulators live in registers; the
// policy comes by value, so its fields do too.
template <int MR, int NV, class P>
TINYLM_INLINE void register_tile(const P p) {
  using F = typename P::Format;
  f32x16 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 6
    for (int v = 0; v < NV; ++v) acc[r][v] = p.start(r, v);
  }
  for (int64_t b = 0; b < p.steps; ++b) {
    for (int64_t k = 0; k < P::kInner; ++k) {
      if constexpr (P::kInputsFirst) {
#pragma GCC unroll 6
        for (int v = 0; v < NV; ++v) p.prefetch(b, k, v);
        typename F::X x[MR];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) x[r] = p.input(b, k, r);
#pragma GCC unroll 6
        for (int v = 0; v < NV; ++v) {
          const typename F::W w = p.weight(b, k, v);
#pragma GCC unroll 8
          for (int r = 0; r < MR; ++r) acc[r][v] = F::madd(acc[r][v], x[r], w);
        }
      } else {
        typename F::W w[NV];
#pragma GCC unroll 6
        for (int v = 0; v < NV; ++v) {
          p.prefetch(b, k, v);
          w[v] = p.weight(b, k, v);
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          const typename F::X x = p.input(b, k, r);
#pragma GCC unroll 6
          for (int v = 0; v < NV; ++v) acc[r][v] = F::madd(acc[r][v], x, w[v]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) p.finish(r, acc[r]);
}

// The last nr < M rows through register_tile<nr, NV>.
template <int M, int NV, class P>
TINYLM_INLINE void tile_rest(int64_t nr, const P& p) {
  if constexpr (M > 1) {
    if (nr == M - 1) return register_tile<M - 1, NV>(p);
    tile_rest<M - 1, NV>(nr, p);
  }
}

// nr rows through NV weight vectors, MR rows at a time: p.rows(r) is the policy from row r on;
// tiles after the first take p.later() (which prefetches nothing new: the first tile brought
// the weights in).
template <int MR, int NV, class P>
void tile_rows(P p, int64_t nr) {
  int64_t r = 0;
  for (; r + MR <= nr; r += MR, p = p.later()) register_tile<MR, NV>(p.rows(r));
  if (r < nr) tile_rest<MR, NV>(nr - r, p.rows(r));
}

// nr rows through nv weight vectors, NV at a time and then one at a time: p.vectors<n>(v) is
// the policy for n vectors from vector v on.
template <int MR, int NV, class P>
void tile_vectors(const P& p, int64_t nr, int64_t nv) {
  int64_t v = 0;
  for (; v + NV <= nv; v += NV) tile_rows<MR, NV>(p.template vectors<NV>(v), nr);
  for (; v < nv; ++v) tile_rows<MR, 1>(p.template vectors<1>(v), nr);
}

// --- The two tiles the formats share --------------------------------------------------------
//
// A format F says how its operands are made, for the tiles below:
//   Weight, In          what the matrix and the activations hold;
//   X, W                an input operand and a weight operand; accumulators are f32x16;
//   kStep               inputs per input vector (16, or 32 for bf16 pairs), kStep / 16 per
//                       broadcast operand;
//   broadcast(x, j)     operand j of a row (input j, or pair j);
//   load_x(p), load_w(p), madd(acc, x, w): an input vector, a weight vector, acc += x w;
//   kLocality           the prefetches' locality hint;
//   kPrefetchSelf       whether in-out tiles with nothing to prefetch prefetch their own weights
//                       (in L1 by then) instead of testing for null in the loop: with the
//                       branch, GCC kept bf16's 8 x 3 tile's accumulators in memory.

// Weights of type T widened to float, one input a broadcast, fused multiply-adds: the format of
// f32, bf16 and f16 matrices (stream.cpp) and of dequantized blocks (quant/matmul.cpp).
template <class T>
struct Widen {
  using Weight = T;
  using In = float;
  using X = f32x16;
  using W = f32x16;
  static constexpr int64_t kStep = kLanes;
  static constexpr int kLocality = 2;  // (into L2)
  static constexpr bool kPrefetchSelf = false;
  TINYLM_INLINE static X broadcast(const float* x, int64_t j) { return splat(x[j]); }
  TINYLM_INLINE static X load_x(const float* p) { return load(p); }
  TINYLM_INLINE static W load_w(const T* p) { return load(p); }
  TINYLM_INLINE static f32x16 madd(f32x16 acc, X x, W w) { return fma(x, w, acc); }
};

// Where a chunk's weights sit for an in-out tile: the weight vector of operand k of band b (from
// the chunk's first) and column vector v (from the tile's first) starts at
// w + b * band + k * kstep + v * vstep. This covers a widened chunk in a buffer and the matrix
// itself in either layout.
template <class T>
struct ChunkWeights {
  const T* w;
  int64_t band, kstep, vstep;
  ChunkWeights at(int64_t v) const { return {w + v * vstep, band, kstep, vstep}; }
};

// In-out products (Conv1D: W is (nin, nout)): s.to[r, 16 v ..] = s.from[r, 16 v ..] (zero if
// from is null) + the chunk's chains, each from zero, over `steps` bands of 16 inputs. Per
// operand the tile loads NV weight vectors and broadcasts MR inputs. x: the chunk's inputs of
// each row, ldx apart (kLdx apart if not 0: a stride known when compiling freed the registers
// that GCC otherwise took from the 8 x 3 tile's loop). `ahead`: where the weights (in wc's
// layout) to prefetch start, a line per weight vector loaded; the first tile of rows prefetches,
// the later ones not.
template <class F, int64_t kLdx = 0>
struct InOutTile {
  using Format = F;
  using Weight = typename F::Weight;
  static constexpr bool kInputsFirst = false;
  static constexpr int64_t kInner = kTile / (F::kStep / kLanes);  // operands a band
  TileSums s;
  const typename F::In* x;
  int64_t ldx;
  ChunkWeights<Weight> wc;
  const Weight* ahead;
  int64_t steps;

  TINYLM_INLINE f32x16 start(int, int) const { return f32x16{}; }
  TINYLM_INLINE void prefetch(int64_t b, int64_t k, int v) const {
    if (F::kPrefetchSelf || ahead)
      __builtin_prefetch(ahead + b * wc.band + k * wc.kstep + v * wc.vstep, 0, F::kLocality);
  }
  TINYLM_INLINE typename F::W weight(int64_t b, int64_t k, int v) const {
    return F::load_w(wc.w + b * wc.band + k * wc.kstep + v * wc.vstep);
  }
  TINYLM_INLINE typename F::X input(int64_t b, int64_t k, int r) const {
    return F::broadcast(x + r * (kLdx ? kLdx : ldx), b * kInner + k);
  }
  template <int NV>
  TINYLM_INLINE void finish(int r, const f32x16 (&acc)[NV]) const {
#pragma GCC unroll 6
    for (int v = 0; v < NV; ++v) {
      const TileSums t = s.at(r, v * kLanes);
      store(t.to, s.from ? load(t.from) + acc[v] : acc[v]);
    }
  }
  InOutTile rows(int64_t r) const {
    return {s.at(r, 0), x + r * (kLdx ? kLdx : ldx), ldx, wc, ahead, steps};
  }
  InOutTile later() const { return {s, x, ldx, wc, F::kPrefetchSelf ? wc.w : nullptr, steps}; }
  template <int N>
  InOutTile vectors(int64_t v) const {
    const Weight* at = F::kPrefetchSelf || ahead ? ahead + v * wc.vstep : nullptr;
    return {s.at(0, v * kLanes), x, ldx, wc.at(v), at, steps};
  }
};

// No sum for the inputs past the last whole vector (they are whole).
struct NoTail {};

// Out-in products (nn.Linear: W is (nout, nin), the head): y[r * ldy + o] = x[r] . W[o] for MR
// rows and NO outputs, each output one chain over whole input vectors with its lanes summed in
// vec.h's order, plus (*tail)(W[o], x[r]) for the inputs past them. Per vector the MR input
// vectors and each weight vector are loaded once. With Prefetch, a line of `ahead` (the weights,
// NO rows nin apart, to bring into L2) per weight vector loaded; tiles with nothing to prefetch
// pass w (in L1 by then): a branch in the loop made GCC keep the accumulators in memory.
template <class F, class Tail, bool Prefetch>
struct OutInTile {
  using Format = F;
  using Weight = typename F::Weight;
  static constexpr bool kInputsFirst = true;
  static constexpr int64_t kInner = 1;
  float* y;
  int64_t ldy;
  const typename F::In* x;
  int64_t nin;
  const Weight* w;
  const Weight* ahead;
  int64_t left;   // outputs from w to the matrix's end
  int64_t steps;  // whole input vectors
  const Tail* tail;

  TINYLM_INLINE f32x16 start(int, int) const { return f32x16{}; }
  TINYLM_INLINE void prefetch(int64_t b, int64_t, int o) const {
    if constexpr (Prefetch) __builtin_prefetch(ahead + o * nin + b * F::kStep, 0, F::kLocality);
  }
  TINYLM_INLINE typename F::W weight(int64_t b, int64_t, int o) const {
    return F::load_w(w + o * nin + b * F::kStep);
  }
  TINYLM_INLINE typename F::X input(int64_t b, int64_t, int r) const {
    return F::load_x(x + r * nin + b * F::kStep);
  }
  template <int NO>
  TINYLM_INLINE void finish(int r, const f32x16 (&acc)[NO]) const {
    float s[NO];
    if constexpr (NO == 1)
      s[0] = hsum(acc[0]);
    else
      hsums<NO>(s, acc);
    for (int o = 0; o < NO; ++o) {
      if constexpr (std::is_same_v<Tail, NoTail>)
        y[r * ldy + o] = s[o];
      else
        y[r * ldy + o] = s[o] + (*tail)(w + o * nin, x + r * nin);
    }
  }
  OutInTile rows(int64_t r) const {
    return {y + r * ldy, ldy, x + r * nin, nin, w, ahead, left, steps, tail};
  }
  OutInTile later() const { return {y, ldy, x, nin, w, w, left, steps, tail}; }
  // N outputs from o on; for more than one, the weights 2 N outputs on (within the matrix) are
  // prefetched.
  template <int N>
  OutInTile vectors(int64_t o) const {
    const Weight* wo = w + o * nin;
    const Weight* at = N > 1 && o + 3 * N <= left ? wo + 2 * N * nin : wo;
    return {y + o, ldy, x, nin, wo, at, left - o, steps, tail};
  }
};

}  // namespace
