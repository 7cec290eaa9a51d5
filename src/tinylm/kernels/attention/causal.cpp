#include "tinylm/kernels/attention/causal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/activation/dropout_draw.h"
#include "tinylm/kernels/attention/causal_reference.h"
#include "tinylm/kernels/cpu/static_switch.h"
#include "tinylm/kernels/cpu/vec_math.h"

namespace tinylm::kernels {
namespace {
int64_t padded(int64_t n) { return (n + 15) / 16 * 16; }

// The most query rows a pass takes at once (each level picks its number, up to this).
constexpr int kMaxRows = 4;

// Scratch per training task: K or V in blocks of 16 positions (Tp x D), three packed T x D
// blocks, the dS matrix (T x Tp) and kMaxRows rows of Tp floats and of Tp bytes.
int64_t task_scratch(int64_t T, int64_t D) {
  return D * padded(T) + 3 * T * D + T * padded(T) + 2 * kMaxRows * padded(T);
}
}  // namespace
}  // namespace tinylm::kernels

TINYLM_LEVEL_BEGIN

namespace {

// f32x16 accumulators a pass keeps in registers (AVX2 has half the registers of AVX-512, and
// two of them make an f32x16). Blocking the columns or the rows leaves every sum's order alone.
constexpr int kAccumulators = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? 16 : 4;

// Consecutive query rows of one sequence taken in one pass (training, and a prompt against
// the cache), each loaded key or value serving all of them: every row keeps its own sums, in
// the order one row alone has them (row-invariant).
constexpr int kRows = TINYLM_LEVEL == TINYLM_LEVEL_AVX512 ? kMaxRows : 2;

// rows[r][from .. padded(n)) = q[r] . k_j for the keys in kt, transposed in blocks of 16
// positions: key j's channel d at kt[j / 16 * ldb + d * ldk + j % 16] (lanes past a row's own
// count are computed from whatever follows and ignored): two chains, even and odd channels,
// from zero in each block (from: a multiple of 16). KB blocks are taken at once where the
// registers hold their sums, so that each query channel broadcast serves KB of them: every lane
// keeps its own two chains, so the bits are those of one block at a time.
template <int R, int KB, class W>
TINYLM_INLINE void score_blocks(float* const* rows, const float* const* q_of, const W* kt,
                                int64_t ldk, int64_t ldb, int64_t s0, int64_t D) {
  const float* q[R];  // (copied: the stores through rows could otherwise alias the pointers)
  for (int r = 0; r < R; ++r) q[r] = q_of[r];
  f32x16 even[R][KB], odd[R][KB];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int b = 0; b < KB; ++b) even[r][b] = odd[r][b] = f32x16{};
  }
  const W* col = kt + s0 / kLanes * ldb;
  int64_t d = 0;
  for (; d + 2 <= D; d += 2) {
    f32x16 k0[KB], k1[KB];
#pragma GCC unroll 4
    for (int b = 0; b < KB; ++b) {
      k0[b] = in_register(load(col + b * ldb + d * ldk));
      k1[b] = in_register(load(col + b * ldb + (d + 1) * ldk));
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const f32x16 q0 = splat(q[r][d]), q1 = splat(q[r][d + 1]);
#pragma GCC unroll 4
      for (int b = 0; b < KB; ++b) {
        even[r][b] = fma(q0, k0[b], even[r][b]);
        odd[r][b] = fma(q1, k1[b], odd[r][b]);
      }
    }
  }
  if (d < D) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int b = 0; b < KB; ++b)
        even[r][b] = fma(q[r][d], load(col + b * ldb + d * ldk), even[r][b]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int b = 0; b < KB; ++b) store(rows[r] + s0 + b * kLanes, even[r][b] + odd[r][b]);
  }
}

template <int R, class W>
TINYLM_INLINE void scores(float* const* rows, const float* const* q, const W* kt, int64_t ldk,
                          int64_t ldb, int64_t n, int64_t D, int64_t from = 0) {
  constexpr int KB = std::clamp(kAccumulators / (2 * R), 1, 2);
  int64_t s0 = from;
  if constexpr (KB > 1) {
    for (; s0 + (KB - 1) * kLanes < n; s0 += KB * kLanes)
      score_blocks<R, KB>(rows, q, kt, ldk, ldb, s0, D);
  }
  for (; s0 < n; s0 += kLanes) score_blocks<R, 1>(rows, q, kt, ldk, ldb, s0, D);
}

// Turns row[0 .. n) into exp(scale * (row - max)) and zeros up to padded(n); returns 1 / sum.
// The last block's lanes past n count as -inf for the max and are written as zeros, chosen in
// registers: scalar stores there stalled the vector loads that read the block back.
TINYLM_INLINE float softmax_unnormalized(float* row, int64_t n, float scale) {
  static constexpr float kLaneOf[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const int64_t last = padded(n) - kLanes;  // the block holding position n - 1
  const f32x16 lane = load(kLaneOf), kept = splat(static_cast<float>(n - last));
  const auto block = [&](int64_t j) {
    const f32x16 x = load(row + j);
    return j < last ? x : select_lt(lane, kept, x, splat(-std::numeric_limits<float>::infinity()));
  };
  f32x16 m = block(0);
  for (int64_t j = kLanes; j <= last; j += kLanes) m = max(m, block(j));
  const float mx = hmax(m);
  f32x16 sum{};
  for (int64_t j = 0; j <= last; j += kLanes) {
    f32x16 e = exp((block(j) - mx) * scale);
    if (j == last) e = select_lt(lane, kept, e, f32x16{});
    store(row + j, e);
    sum += e;
  }
  return 1.0f / hsum(sum);
}

// dst[0 .. n) = src[0 .. n) times f (dst may be src): a softmax row normalized.
TINYLM_INLINE void scale_row(float* dst, const float* src, int64_t n, float f) {
  for (int64_t j = 0; j < n; j += kLanes) {
    const int64_t w = std::min(kLanes, n - j);
    store_n(dst + j, load_n(src + j, w) * f, w);
  }
}

// The first `width` (<= 16) floats of a row of W values, widened.
template <class W>
TINYLM_INLINE f32x16 load_row(const W* p, int64_t width) {
  return width >= kLanes ? load(p) : load_n(p, width);
}

// out[r][0 .. width) = sum_{j < n[r]} p[r][j] v_j, v_j at v + j / 16 * ldb + j % 16 * ldv (in
// blocks of 16 positions), NV vectors of columns; n[0] <= n[1] <= ... (one chain over j a row).
// With from > 0 (a multiple of 16; one row) the chains go on from out's sums of j < from.
// kFull: width is NV whole vectors (lanes(k) is then a constant: no lane checks in the loops).
template <int R, int NV, bool kFull, class W>
TINYLM_INLINE void weighted_block(float* const* out, const float* const* p_of, const int64_t* n,
                                  const W* v, int64_t ldv, int64_t ldb, int64_t width,
                                  int64_t from) {
  const float* p[R];  // (copied: the stores through out could otherwise alias the row pointers)
  for (int r = 0; r < R; ++r) p[r] = p_of[r];
  const auto lanes = [&](int k) { return kFull ? kLanes : std::min(kLanes, width - k * kLanes); };
  f32x16 acc[R][NV];  // (loops fully unrolled: the accumulators live in registers)
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int k = 0; k < NV; ++k)
      acc[r][k] = from > 0 ? load_n(out[r] + k * kLanes, lanes(k)) : f32x16{};
  }
  for (int64_t j0 = from; j0 < n[0]; j0 += kLanes) {
    const W* vb = v + j0 / kLanes * ldb;
    for (int64_t j = j0; j < std::min(n[0], j0 + kLanes); ++j) {
#pragma GCC unroll 8
      for (int k = 0; k < NV; ++k) {
        const f32x16 vk = in_register(load_row(vb + (j - j0) * ldv + k * kLanes, lanes(k)));
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r][k] = fma(splat(p[r][j]), vk, acc[r][k]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 1; i < R; ++i) {  // positions n[i-1] .. n[i]-1: rows i and after
    for (int64_t j = n[i - 1]; j < n[i]; ++j) {
      const W* vj = v + j / kLanes * ldb + j % kLanes * ldv;
#pragma GCC unroll 8
      for (int k = 0; k < NV; ++k) {
        const f32x16 vk = in_register(load_row(vj + k * kLanes, lanes(k)));
#pragma GCC unroll 4
        for (int r = i; r < R; ++r) acc[r][k] = fma(splat(p[r][j]), vk, acc[r][k]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    for (int k = 0; k < NV; ++k) store_n(out[r] + k * kLanes, acc[r][k], lanes(k));
  }
}

template <int R, class W>
void weighted_sum(float* const* out, const float* const* p, const int64_t* n, const W* v,
                  int64_t ldv, int64_t ldb, int64_t D, int64_t from = 0) {
  // The widest block whose sums fit the registers (each pass reads p and the values once).
  constexpr int kMaxNV = kAccumulators / R;
  for (int64_t c = 0; c < D;) {
    const int64_t vectors = (D - c + kLanes - 1) / kLanes;
    const auto block = [&]<int NV>() {  // returns the columns done
      float* o[R];
      for (int r = 0; r < R; ++r) o[r] = out[r] + c;
      if (D - c >= NV * kLanes)
        weighted_block<R, NV, true>(o, p, n, v + c, ldv, ldb, NV * kLanes, from);
      else
        weighted_block<R, NV, false>(o, p, n, v + c, ldv, ldb, D - c, from);
      return int64_t{NV} * kLanes;
    };
    if (kMaxNV >= 8 && vectors >= 8)
      c += block.template operator()<8>();
    else if (kMaxNV >= 4 && vectors >= 4)
      c += block.template operator()<4>();
    else if (kMaxNV >= 2 && vectors >= 2)
      c += block.template operator()<2>();
    else
      c += block.template operator()<1>();
  }
}

// Query rows q[r] (n[r] = n[0] + r keys each: consecutive rows of one sequence) against keys
// (as scores reads them) and values: p = softmax of the scaled scores (into p_out[r], or in
// place in rows[r] when p_out is null), out[r] = sum_j p_j v_j. rows: R rows of padded(n[R-1])
// floats of scratch. With keep (training's attention-weight dropout, p_out given): p_out[r]
// holds p negated where keep[r][j] is 0, and out sums the kept p_j times keep_scale (made in
// rows[r]).
template <int R, class W>
void attend_rows(float* const* out, float* const* p_out, float* const* rows, const float* const* q,
                 const W* kt, int64_t ldk, int64_t ldb, const W* v, int64_t ldv, int64_t ldvb,
                 int64_t n0, int64_t D, float scale, const uint8_t* const* keep = nullptr,
                 float keep_scale = 0.0f) {
  int64_t n[R];
  for (int r = 0; r < R; ++r) n[r] = n0 + r;
  scores<R>(rows, q, kt, ldk, ldb, n[R - 1], D);
  const float* sum_of[R];
  for (int r = 0; r < R; ++r) {
    float* p = p_out ? p_out[r] : rows[r];
    scale_row(p, rows[r], n[r], softmax_unnormalized(rows[r], n[r], scale));
    sum_of[r] = p;
    if (keep) {  // (arithmetic on the 0/1 bytes rather than branches: vectorized)
      for (int64_t j = 0; j < n[r]; ++j) {
        const float k = keep[r][j];
        rows[r][j] = p[j] * keep_scale * k;
        p[j] *= 2.0f * k - 1.0f;
      }
      sum_of[r] = rows[r];
    }
  }
  weighted_sum<R>(out, sum_of, n, v, ldv, ldvb, D);
}

float attention_scale(int64_t D) { return 1.0f / std::sqrt(static_cast<float>(D)); }

// Runs pass<R>(t) over rows 0 .. Tn-1, kRows at a time, then one at a time.
template <class Pass>
TINYLM_INLINE void over_rows(int64_t Tn, Pass pass) {
  int64_t t = 0;
  for (; t + kRows <= Tn; t += kRows) pass.template operator()<kRows>(t);
  for (; t < Tn; ++t) pass.template operator()<1>(t);
}

// ---- training -----------------------------------------------------------------------------

// A head's rows of q, k, v or dO sit C or 3C floats apart in memory: a stride that maps them
// onto a few cache sets. Each task first packs what it reads repeatedly into contiguous T x D
// blocks (or transposed blocks), so the loops run from L1/L2 without conflict misses.
void pack_rows(float* dst, const float* src, int64_t ld, int64_t Tn, int64_t D) {
  for (int64_t t = 0; t < Tn; ++t)
    std::memcpy(dst + t * D, src + t * ld, static_cast<size_t>(D) * sizeof(float));
}

// Asks for the cache lines of Tn rows of D floats, ld apart, before they are read: the backward's
// inputs were written long before (its packing waited on them one row at a time).
void prefetch_rows(const float* src, int64_t ld, int64_t Tn, int64_t D) {
  for (int64_t t = 0; t < Tn; ++t) {
    for (int64_t d = 0; d < D; d += kLanes) __builtin_prefetch(src + t * ld + d, 0, 3);
  }
}

// A task's inputs ahead of the backward's packing, where they fit in half of a 2 MiB L2 (longer
// sequences' probabilities alone outgrow it: the hardware's prefetchers have those).
void prefetch_task(const float* base, const float* dout, const float* att, int64_t Tn, int64_t C,
                   int64_t D) {
  if ((Tn * Tn + 4 * Tn * D) * static_cast<int64_t>(sizeof(float)) > (1 << 20)) return;
  for (int64_t part = 0; part < 3; ++part) prefetch_rows(base + part * C, 3 * C, Tn, D);
  prefetch_rows(dout, C, Tn, D);
  prefetch_rows(att, Tn, Tn, Tn);
}

// dst = the head's D columns of rows 0..T-1 of src (row stride ld) in blocks of 16 positions,
// each block transposed (D x 16: position t's channel d at t / 16 * 16 D + d * 16 + t % 16, as
// scores reads keys); the padding positions are zero.
// A block is written channel by channel, each its 16 positions in one line: position by
// position, every store went to another line.
void transpose_head(float* dst, const float* src, int64_t ld, int64_t Tn, int64_t D) {
  for (int64_t t0 = 0; t0 < Tn; t0 += kLanes) {
    float* block = dst + t0 * D;
    const int64_t n = std::min(kLanes, Tn - t0);
    for (int64_t d = 0; d < D; ++d) {
      float* line = block + d * kLanes;
      for (int64_t i = 0; i < n; ++i) line[i] = src[(t0 + i) * ld + d];
      for (int64_t i = n; i < kLanes; ++i) line[i] = 0.0f;
    }
  }
}

// Attention-weight dropout as the level gets it: threshold 0 is none.
struct Drop {
  uint32_t threshold = 0;
  float keep_scale = 0;
  DropoutSite where;
};

// task: the (sequence, head) pair's index, whose rows' masks start at element task T T.
void forward_task(float* out, float* att, const float* base, float* scratch, int64_t Tn, int64_t C,
                  int64_t D, int64_t task, const Drop& drop) {
  const int64_t C3 = 3 * C, Tp = padded(Tn);
  float* kt = scratch;                                               // Tp x D, blocked
  float* vp = kt + D * Tp;                                           // T x D
  float* rows = vp + Tn * D;                                         // kMaxRows x Tp
  uint8_t* keep = reinterpret_cast<uint8_t*>(rows + kMaxRows * Tp);  // kMaxRows x Tp bytes
  transpose_head(kt, base + C, C3, Tn, D);
  pack_rows(vp, base + 2 * C, C3, Tn, D);
  const float scale = attention_scale(D);
  over_rows(Tn, [&]<int R>(int64_t t) {
    float *o[R], *a[R], *row[R];
    const float* q[R];
    const uint8_t* kept[R];
    for (int r = 0; r < R; ++r) {
      o[r] = out + (t + r) * C;
      a[r] = att + (t + r) * Tn;
      row[r] = rows + r * Tp;
      q[r] = base + (t + r) * C3;
      kept[r] = keep + r * Tp;
      if (drop.threshold != 0) {
        DropoutSite where = drop.where;
        where.first += static_cast<uint64_t>((task * Tn + t + r) * Tn);
        dropout_mask_range(keep + r * Tp, 0, t + r + 1, drop.threshold, where);
      }
    }
    attend_rows<R>(o, a, row, q, kt, kLanes, kLanes * D, vp, D, kLanes * D, t + 1, D, scale,
                   drop.threshold != 0 ? kept : nullptr, drop.keep_scale);
    for (int r = 0; r < R; ++r) std::fill(a[r] + t + r + 1, a[r] + Tn, 0.0f);
  });
}

// The weight P' the forward summed the values with, from a saved probability.
template <bool kDrop>
TINYLM_INLINE float dropped_weight(float a, float keep_scale) {
  if constexpr (kDrop) return (a > 0.0f ? a : 0.0f) * keep_scale;  // (maxss: no branch)
  return a;
}

// Columns j .. j+K-1 of dK (kDk) or of dV: dK_j = sum_{t >= j} dS[t][j] Q_t, dV_j = sum_{t >= j}
// P'[t][j] dO_t, each sum one chain over t.
template <int K, int NV, bool kDk, bool kDrop>
TINYLM_INLINE void column_sums(float* dbase, const float* ds, const float* att, const float* qp,
                               const float* gp, int64_t j, int64_t Tn, int64_t Tp, int64_t C,
                               float keep_scale) {
  constexpr int64_t D = kLanes * NV;
  const float* rows = kDk ? qp : gp;
  f32x16 sum[K][NV];  // (loops fully unrolled: the sums live in registers)
#pragma GCC unroll 4
  for (int c = 0; c < K; ++c) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) sum[c][v] = f32x16{};
  }
  // Row t into columns j .. j+last.
  const auto add = [&]<int kLast>(int64_t t) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const f32x16 x = in_register(load(rows + t * D + kLanes * v));
#pragma GCC unroll 4
      for (int c = 0; c <= kLast; ++c) {
        const float w =
            kDk ? ds[t * Tp + j + c] : dropped_weight<kDrop>(att[t * Tn + j + c], keep_scale);
        sum[c][v] = fma(w, x, sum[c][v]);
      }
    }
  };
  // Rows j .. j+K-2 reach only the columns up to their own.
  [&]<int... I>(std::integer_sequence<int, I...>) { (add.template operator()<I>(j + I), ...); }
  (std::make_integer_sequence<int, K - 1>{});
  for (int64_t t = j + K - 1; t < Tn; ++t) add.template operator()<K - 1>(t);
  const int64_t part = kDk ? C : 2 * C;  // where dK (dV) sits in a row of dqkv
  for (int c = 0; c < K; ++c) {
    for (int v = 0; v < NV; ++v) store(dbase + (j + c) * 3 * C + part + kLanes * v, sum[c][v]);
  }
}

// kDrop: att's signs are the forward's dropout mask, kept ones scaled by keep_scale.
template <int NV, bool kDrop>
void backward_task(float* dbase, const float* dout, const float* att, const float* base,
                   float* scratch, int64_t Tn, int64_t C, float keep_scale) {
  constexpr int64_t D = kLanes * NV;
  const int64_t C3 = 3 * C, Tp = padded(Tn);
  const float scale = attention_scale(D);
  float* vt = scratch;      // Tp x D, blocked
  float* kp = vt + D * Tp;  // T x D each
  float* qp = kp + Tn * D;
  float* gp = qp + Tn * D;
  float* ds = gp + Tn * D;      // T x Tp
  float* p_abs = ds + Tn * Tp;  // kMaxRows x Tp: with dropout, the rows' P
  prefetch_task(base, dout, att, Tn, C, D);
  transpose_head(vt, base + 2 * C, C3, Tn, D);
  pack_rows(kp, base + C, C3, Tn, D);
  pack_rows(qp, base, C3, Tn, D);
  pack_rows(gp, dout, C, Tn, D);
  // Rows: dS and dQ.
  over_rows(Tn, [&]<int R>(int64_t t) {
    float *dsr[R], *dq[R];
    const float* g[R];
    int64_t n[R];
    for (int r = 0; r < R; ++r) {
      dsr[r] = ds + (t + r) * Tp;
      dq[r] = dbase + (t + r) * C3;
      g[r] = gp + (t + r) * D;
      n[r] = t + r + 1;
    }
    scores<R>(dsr, g, vt, kLanes, kLanes * D, n[R - 1], D);  // the dP rows
    for (int r = 0; r < R; ++r) {
      const float* p = att + (t + r) * Tn;
      float* d = dsr[r];
      if constexpr (kDrop) {  // dP through the mask; P unsigned (a kept or dropped 0 adds 0)
        float* pa = p_abs + r * Tp;
        for (int64_t j = 0; j < n[r]; j += kLanes) {
          const int64_t w = std::min(kLanes, n[r] - j);
          const f32x16 a = load_n(p + j, w), zero{};
          store_n(d + j, select_lt(zero, a, load_n(d + j, w) * keep_scale, zero), w);
          store_n(pa + j, abs(a), w);
        }
        p = pa;
      }
      f32x16 acc{};
      for (int64_t j = 0; j < n[r]; j += kLanes) {
        const int64_t w = std::min(kLanes, n[r] - j);
        acc = fma(load_n(p + j, w), load_n(d + j, w), acc);
      }
      const float dot = hsum(acc);
      for (int64_t j = 0; j < n[r]; j += kLanes) {
        const int64_t w = std::min(kLanes, n[r] - j);
        store_n(d + j, load_n(p + j, w) * (load_n(d + j, w) - dot) * scale, w);
      }
    }
    weighted_sum<R>(dq, dsr, n, kp, D, kLanes * D, D);  // dQ_t = dS_t K
  });
  // Columns: each row of dK, then of dV, written once, K columns a pass (as many as the
  // registers hold the sums of: each row of Q or dO read serves all K).
  constexpr int K = std::clamp(kAccumulators / NV, 1, kMaxRows);
  const auto columns = [&]<bool kDk>() {
    int64_t j = 0;
    for (; j + K <= Tn; j += K)
      column_sums<K, NV, kDk, kDrop>(dbase, ds, att, qp, gp, j, Tn, Tp, C, keep_scale);
    for (; j < Tn; ++j)
      column_sums<1, NV, kDk, kDrop>(dbase, ds, att, qp, gp, j, Tn, Tp, C, keep_scale);
  };
  columns.template operator()<true>();
  columns.template operator()<false>();
}

// ---- inference -----------------------------------------------------------------------------

// Head h's D channels of position t's key and value (k, v: the whole row's C floats).
template <class W>
void store_head(W* keys, W* values, const float* k, const float* v, int64_t t, int64_t C, int64_t D,
                int64_t h) {
  W* kb = keys + kv_key_index(h * D, t, C);  // channel h D + d at kb[d * 16]
  W* vb = values + kv_value_index(h * D, t, C, D);
  const float* kh = k + h * D;
  const float* vh = v + h * D;
  W tmp[kLanes];
  int64_t d = 0;
  for (; d + kLanes <= D; d += kLanes) {
    store(tmp, load(kh + d));
    for (int64_t l = 0; l < kLanes; ++l) kb[(d + l) * kLanes] = tmp[l];
    store(vb + d, load(vh + d));
  }
  for (; d < D; ++d) {
    from_float(kb[d * kLanes], kh[d]);
    from_float(vb[d], vh[d]);
  }
}

template <class W>
void store_kv(W* keys, W* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head) {
  for (int64_t h = 0; h < n_head; ++h) store_head(keys, values, k, v, t, C, C / n_head, h);
}

// Query rows q[r] (out[r]: head h's D channels) against head h's cached keys and values of
// positions 0 .. n0+r-1, in the cache's blocks of 16 positions. rows: R rows of padded(n0+R-1)
// floats of scratch.
template <int R, class W>
TINYLM_INLINE void attend_head(float* const* out, float* const* rows, const float* const* q,
                               const W* keys, const W* values, int64_t h, int64_t n0, int64_t C,
                               int64_t D) {
  attend_rows<R>(out, nullptr, rows, q, keys + kv_key_index(h * D, 0, C), kLanes, kLanes * C,
                 values + kv_value_index(h * D, 0, C, D), D, kLanes * C, n0, D, attention_scale(D));
}

template <class W>
void cached(float* out, const float* q, const W* keys, const W* values, int64_t t0, int64_t t1,
            int64_t C, int64_t n_head) {
  const int64_t D = C / n_head, ld = padded(t1);
  parallel_for(0, n_head, 1, [&](int64_t h) {
    thread_local AlignedVector<float> rows;  // grown once, then reused every token
    rows.resize(static_cast<size_t>(kRows * ld));
    over_rows(t1 - t0, [&]<int R>(int64_t i) {
      float *o[R], *row[R];
      const float* qr[R];
      for (int r = 0; r < R; ++r) {
        o[r] = out + (i + r) * C + h * D;
        row[r] = rows.data() + r * ld;
        qr[r] = q + (i + r) * C + h * D;
      }
      attend_head<R>(o, row, qr, keys, values, h, t0 + i + 1, C, D);
    });
  });
}

// Rows of several sequences: threads split the (row, group of heads) pairs, a row's heads in one
// group when there are rows enough for every thread twice over. A pair walks its row's cache a
// block of 16 positions at a time, its heads' keys (then values) of a block lying together, so
// that the reads stream in order (a head's alone are short runs 16 C apart, which left the
// hardware prefetchers little to follow). Each head gets cached()'s operations in their order:
// a block's scores from zero, the softmax over the row, each channel's sum one chain over the
// positions (carried from block to block through out), so the bits are the same. With kv (a
// decode step: rows of distinct sequences), a pair first stores its heads of the row's key and
// value (kv + r ldkv, the value C on).
template <class Cache>
void cached_rows(float* out, const float* q, const float* kv, int64_t ldkv, Cache* const* keys,
                 Cache* const* values, const int64_t* positions, int64_t rows, int64_t C,
                 int64_t n_head) {
  const int64_t D = C / n_head;
  const float scale = attention_scale(D);
  const int64_t wanted = std::clamp<int64_t>((2 * num_threads() + rows - 1) / rows, 1, n_head);
  const int64_t per = (n_head + wanted - 1) / wanted, groups = (n_head + per - 1) / per;
  parallel_for(0, rows * groups, 1, [&](int64_t task) {
    const int64_t r = task / groups, h0 = task % groups * per, h1 = std::min(n_head, h0 + per);
    const int64_t n = positions[r] + 1, ld = padded(n);
    if constexpr (!std::is_const_v<Cache>) {
      for (int64_t h = h0; h < h1; ++h)
        store_head(keys[r], values[r], kv + r * ldkv, kv + r * ldkv + C, n - 1, C, D, h);
    }
    thread_local AlignedVector<float> scratch;  // grown once, then reused every token
    scratch.resize(static_cast<size_t>((h1 - h0) * ld));
    const auto row = [&](int64_t h) { return scratch.data() + (h - h0) * ld; };
    for (int64_t b0 = 0; b0 < n; b0 += kLanes) {
      for (int64_t h = h0; h < h1; ++h) {
        float* s = row(h);
        const float* qh = q + r * C + h * D;
        scores<1>(&s, &qh, keys[r] + kv_key_index(h * D, 0, C), kLanes, kLanes * C,
                  std::min(n, b0 + kLanes), D, b0);
      }
    }
    for (int64_t h = h0; h < h1; ++h) {
      float* p = row(h);
      scale_row(p, p, n, softmax_unnormalized(p, n, scale));
    }
    for (int64_t b0 = 0; b0 < n; b0 += kLanes) {
      const int64_t b1 = std::min(n, b0 + kLanes);
      for (int64_t h = h0; h < h1; ++h) {
        float* o = out + r * C + h * D;
        const float* p = row(h);
        weighted_sum<1>(&o, &p, &b1, values[r] + kv_value_index(h * D, 0, C, D), D, kLanes * C, D,
                        b0);
      }
    }
  });
}

}  // namespace

void causal_attention_forward(float* out, float* att, const float* qkv, float* scratch, int64_t B,
                              int64_t Tn, int64_t C, int64_t n_head, uint32_t threshold,
                              float keep_scale, DropoutSite where) {
  const int64_t D = C / n_head, C3 = 3 * C;
  const Drop drop{threshold, keep_scale, where};
  parallel_for(0, B * n_head, grain_for(Tn * Tn * D), [&](int64_t task) {
    const int64_t b = task / n_head, h = task % n_head;
    forward_task(out + b * Tn * C + h * D, att + task * Tn * Tn, qkv + b * Tn * C3 + h * D,
                 scratch + task * task_scratch(Tn, D), Tn, C, D, task, drop);
  });
}

void causal_attention_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                               float* scratch, int64_t B, int64_t Tn, int64_t C, int64_t n_head,
                               float keep_scale) {
  const int64_t D = C / n_head, C3 = 3 * C;
  parallel_for(0, B * n_head, grain_for(2 * Tn * Tn * D), [&](int64_t task) {
    const int64_t b = task / n_head, h = task % n_head;
    const float* base = qkv + b * Tn * C3 + h * D;
    float* dbase = dqkv + b * Tn * C3 + h * D;
    const float* go = dout + b * Tn * C + h * D;
    const float* a = att + task * Tn * Tn;
    float* s = scratch + task * task_scratch(Tn, D);
    const bool vectors = D % kLanes == 0 && static_switch<1, 8>(D / kLanes, [&]<int NV>() {
                           if (keep_scale > 0.0f)
                             backward_task<NV, true>(dbase, go, a, base, s, Tn, C, keep_scale);
                           else
                             backward_task<NV, false>(dbase, go, a, base, s, Tn, C, 0.0f);
                         });
    if (!vectors) reference::attention_head_backward(dbase, go, a, base, s, Tn, C, D, keep_scale);
  });
}

void kv_store(float* keys, float* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head) {
  store_kv(keys, values, k, v, t, C, n_head);
}
void kv_store(Bf16* keys, Bf16* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head) {
  store_kv(keys, values, k, v, t, C, n_head);
}
void kv_store(F16* keys, F16* values, const float* k, const float* v, int64_t t, int64_t C,
              int64_t n_head) {
  store_kv(keys, values, k, v, t, C, n_head);
}
void attention_cached_rows(float* out, const float* q, const float* const* keys,
                           const float* const* values, const int64_t* positions, int64_t rows,
                           int64_t C, int64_t n_head) {
  cached_rows(out, q, nullptr, 0, keys, values, positions, rows, C, n_head);
}
void attention_cached_rows(float* out, const float* q, const Bf16* const* keys,
                           const Bf16* const* values, const int64_t* positions, int64_t rows,
                           int64_t C, int64_t n_head) {
  cached_rows(out, q, nullptr, 0, keys, values, positions, rows, C, n_head);
}
void attention_cached_rows(float* out, const float* q, const F16* const* keys,
                           const F16* const* values, const int64_t* positions, int64_t rows,
                           int64_t C, int64_t n_head) {
  cached_rows(out, q, nullptr, 0, keys, values, positions, rows, C, n_head);
}
void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,
                         float* const* keys, float* const* values, const int64_t* positions,
                         int64_t rows, int64_t C, int64_t n_head) {
  cached_rows(out, q, kv, ldkv, keys, values, positions, rows, C, n_head);
}
void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,
                         Bf16* const* keys, Bf16* const* values, const int64_t* positions,
                         int64_t rows, int64_t C, int64_t n_head) {
  cached_rows(out, q, kv, ldkv, keys, values, positions, rows, C, n_head);
}
void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,
                         F16* const* keys, F16* const* values, const int64_t* positions,
                         int64_t rows, int64_t C, int64_t n_head) {
  cached_rows(out, q, kv, ldkv, keys, values, positions, rows, C, n_head);
}
void attention_cached(float* out, const float* q, const float* keys, const float* values,
                      int64_t t0, int64_t t1, int64_t C, int64_t n_head) {
  cached(out, q, keys, values, t0, t1, C, n_head);
}
void attention_cached(float* out, const float* q, const Bf16* keys, const Bf16* values, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head) {
  cached(out, q, keys, values, t0, t1, C, n_head);
}
void attention_cached(float* out, const float* q, const F16* keys, const F16* values, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head) {
  cached(out, q, keys, values, t0, t1, C, n_head);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// The training entries check the dropout rate and take its threshold and scale.
#define TINYLM_ATTENTION_TRAINING_ENTRIES(X)                                                \
  X(void causal_attention_forward(float* out, float* att, const float* qkv, float* scratch, \
                                  int64_t B, int64_t T, int64_t C, int64_t n_head,          \
                                  uint32_t threshold, float keep_scale, DropoutSite where), \
    causal_attention_forward,                                                               \
    (out, att, qkv, scratch, B, T, C, n_head, threshold, keep_scale, where))                \
  X(void causal_attention_backward(float* dqkv, const float* dout, const float* att,        \
                                   const float* qkv, float* scratch, int64_t B, int64_t T,  \
                                   int64_t C, int64_t n_head, float keep_scale),            \
    causal_attention_backward, (dqkv, dout, att, qkv, scratch, B, T, C, n_head, keep_scale))
TINYLM_ACTIVE_ENTRIES(TINYLM_ATTENTION_TRAINING_ENTRIES)

#define TINYLM_ATTENTION_ENTRIES(X)                                                                \
  X(void kv_store(float* keys, float* values, const float* k, const float* v, int64_t t,           \
                  int64_t C, int64_t n_head),                                                      \
    kv_store, (keys, values, k, v, t, C, n_head))                                                  \
  X(void kv_store(Bf16* keys, Bf16* values, const float* k, const float* v, int64_t t, int64_t C,  \
                  int64_t n_head),                                                                 \
    kv_store, (keys, values, k, v, t, C, n_head))                                                  \
  X(void kv_store(F16* keys, F16* values, const float* k, const float* v, int64_t t, int64_t C,    \
                  int64_t n_head),                                                                 \
    kv_store, (keys, values, k, v, t, C, n_head))                                                  \
  X(void attention_cached(float* out, const float* q, const float* keys, const float* values,      \
                          int64_t t0, int64_t t1, int64_t C, int64_t n_head),                      \
    attention_cached, (out, q, keys, values, t0, t1, C, n_head))                                   \
  X(void attention_cached(float* out, const float* q, const Bf16* keys, const Bf16* values,        \
                          int64_t t0, int64_t t1, int64_t C, int64_t n_head),                      \
    attention_cached, (out, q, keys, values, t0, t1, C, n_head))                                   \
  X(void attention_cached(float* out, const float* q, const F16* keys, const F16* values,          \
                          int64_t t0, int64_t t1, int64_t C, int64_t n_head),                      \
    attention_cached, (out, q, keys, values, t0, t1, C, n_head))                                   \
  X(void attention_cached_rows(float* out, const float* q, const float* const* keys,               \
                               const float* const* values, const int64_t* positions, int64_t rows, \
                               int64_t C, int64_t n_head),                                         \
    attention_cached_rows, (out, q, keys, values, positions, rows, C, n_head))                     \
  X(void attention_cached_rows(float* out, const float* q, const Bf16* const* keys,                \
                               const Bf16* const* values, const int64_t* positions, int64_t rows,  \
                               int64_t C, int64_t n_head),                                         \
    attention_cached_rows, (out, q, keys, values, positions, rows, C, n_head))                     \
  X(void attention_cached_rows(float* out, const float* q, const F16* const* keys,                 \
                               const F16* const* values, const int64_t* positions, int64_t rows,   \
                               int64_t C, int64_t n_head),                                         \
    attention_cached_rows, (out, q, keys, values, positions, rows, C, n_head))                     \
  X(void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,            \
                             float* const* keys, float* const* values, const int64_t* positions,   \
                             int64_t rows, int64_t C, int64_t n_head),                             \
    attention_step_rows, (out, q, kv, ldkv, keys, values, positions, rows, C, n_head))             \
  X(void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,            \
                             Bf16* const* keys, Bf16* const* values, const int64_t* positions,     \
                             int64_t rows, int64_t C, int64_t n_head),                             \
    attention_step_rows, (out, q, kv, ldkv, keys, values, positions, rows, C, n_head))             \
  X(void attention_step_rows(float* out, const float* q, const float* kv, int64_t ldkv,            \
                             F16* const* keys, F16* const* values, const int64_t* positions,       \
                             int64_t rows, int64_t C, int64_t n_head),                             \
    attention_step_rows, (out, q, kv, ldkv, keys, values, positions, rows, C, n_head))
TINYLM_PUBLIC_ENTRIES(TINYLM_ATTENTION_ENTRIES)

int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t C, int64_t n_head) {
  return B * n_head * task_scratch(T, C / n_head);
}

namespace {
// The backward's keep scale: 0 without dropout.
float backward_scale(float dropout) {
  check(dropout >= 0.0f && dropout < 1.0f, "dropout: rate must be in [0, 1), got ", dropout);
  return dropout > 0.0f ? dropout_keep_scale(dropout) : 0.0f;
}
}  // namespace

void causal_attention_forward(float* out, float* att, const float* qkv, float* scratch, int64_t B,
                              int64_t T, int64_t C, int64_t n_head, float dropout,
                              DropoutSite where) {
  check_dropout(B * n_head * T * T, dropout, where);
  active::causal_attention_forward(out, att, qkv, scratch, B, T, C, n_head,
                                   dropout_keep_threshold(dropout), dropout_keep_scale(dropout),
                                   where);
}
void causal_attention_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                               float* scratch, int64_t B, int64_t T, int64_t C, int64_t n_head,
                               float dropout) {
  active::causal_attention_backward(dqkv, dout, att, qkv, scratch, B, T, C, n_head,
                                    backward_scale(dropout));
}

void causal_attention_forward(double* out, double* att, const double* qkv, double* scratch,
                              int64_t B, int64_t T, int64_t C, int64_t n_head, float dropout,
                              DropoutSite where) {
  const int64_t D = C / n_head;
  (void)scratch;
  check_dropout(B * n_head * T * T, dropout, where);
  std::vector<uint8_t> keep;
  if (dropout > 0.0f) keep.resize(static_cast<size_t>(T * T));
  const double keep_scale = 1.0 / (1.0 - static_cast<double>(dropout));
  for (int64_t task = 0; task < B * n_head; ++task) {
    const int64_t b = task / n_head, h = task % n_head;
    if (!keep.empty()) {
      DropoutSite head = where;
      head.first += static_cast<uint64_t>(task * T * T);
      dropout_mask(keep.data(), T * T, dropout, head);
    }
    reference::attention_head_forward(out + b * T * C + h * D, att + task * T * T,
                                      qkv + b * T * 3 * C + h * D, T, C, D,
                                      keep.empty() ? nullptr : keep.data(), keep_scale);
  }
}
void causal_attention_backward(double* dqkv, const double* dout, const double* att,
                               const double* qkv, double* scratch, int64_t B, int64_t T, int64_t C,
                               int64_t n_head, float dropout) {
  const int64_t D = C / n_head;
  const double keep_scale =
      backward_scale(dropout) > 0.0f ? 1.0 / (1.0 - static_cast<double>(dropout)) : 0.0;
  for (int64_t task = 0; task < B * n_head; ++task) {
    const int64_t b = task / n_head, h = task % n_head;
    reference::attention_head_backward(dqkv + b * T * 3 * C + h * D, dout + b * T * C + h * D,
                                       att + task * T * T, qkv + b * T * 3 * C + h * D, scratch, T,
                                       C, D, keep_scale);
  }
}

}  // namespace tinylm::kernels
#endif
