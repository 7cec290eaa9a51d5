#pragma once
// The fp32 inference kernels of GPT-style models, explicitly instantiated for float, Bf16
// and F16 weights (half weights are widened to float; accumulation is float). Compiled with
// FMA contraction on: these results are compared with tolerances, not bit for bit.
#include <cstdint>

#include "tinylm/kernels/half.h"

namespace tinylm::kernels {

// y = LayerNorm(x) * w + b per row. y, x: (rows, C); w, b: (C).
void layernorm_forward(float* y, const float* x, const float* w, const float* b, int64_t rows,
                       int64_t C, float eps);

// How a Conv1D weight matrix W: (nin, nout) is laid out in memory.
//   rows:  row-major, as Hugging Face stores it.
//   tiles: 16 x 16 tiles, each row-major and contiguous (512 bytes in bf16), ordered by
//          16-row band and then by column: decode reads each band's 16 rows as one
//          sequential stream instead of 16 interleaved ones, which the prefetchers follow
//          better. bf16/f16 decode of GPT-2 124M ran 4-18% faster in paired runs (prefill
//          ~10% slower); f32 products did not gain (0.83-0.97x). Needs nin and nout to be
//          multiples of 16.
enum class Layout { rows, tiles };
constexpr int64_t kTile = 16;
inline bool can_tile(int64_t nin, int64_t nout) { return nin % kTile == 0 && nout % kTile == 0; }

// Copies row-major `src` (nin, nout) into `dst` in the tiles layout (can_tile must hold).
template <class W>
void pack_tiles(W* dst, const W* src, int64_t nin, int64_t nout);

// Conv1D (Hugging Face GPT-2): y = x W + b with W: (nin, nout) in `layout`.
// y: (rows, nout)   x: (rows, nin)   b: (nout) or null. Both layouts give the same bits, at
// any thread count. When can_tile(nin, nout), each row's result is also the same bits
// whatever the number of rows, so a batched prefill matches decoding one row at a time.
template <class W>
void matmul_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows, int64_t nin,
                   int64_t nout, Layout layout = Layout::rows);

// nn.Linear layout: y[r][o] = sum_i x[r][i] W[o][i] with W: (nout, nin) row-major (the tied
// output head: logits = x wte^T). Threads split the outputs.
template <class W>
void matmul_out_in(float* y, const float* x, const W* w, int64_t rows, int64_t nin, int64_t nout);

// Causal self-attention of rows [t0, t1) against cached positions: q: (rows, C) for those
// rows; k_cache, v_cache: (max_pos, C) holding positions 0..t1-1 (this call's rows already
// written); out: (rows, C). Heads are contiguous C / n_head slices. Threads split heads.
template <class KV>
void attention_cached(float* out, const float* q, const KV* k_cache, const KV* v_cache, int64_t t0,
                      int64_t t1, int64_t C, int64_t n_head);

}  // namespace tinylm::kernels
