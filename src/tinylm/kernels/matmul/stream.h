#pragma once
// Products of activation rows with a weight matrix streamed from memory: GPT-2 inference,
// where decode (one row) is bound by the bytes of weights read and prefill (many rows) by
// arithmetic. Weights are float, Bf16 or F16 (widened to float); accumulation is float.
//
// Contract: row-invariant. A row's result is the same bits whether it is computed alone or
// among other rows (so a batched prefill equals decoding token by token), at any thread count
// and at every level. Each output of matmul_in_out sums its inputs in chunks of 64: per chunk
// two chains of fused multiply-adds (even and odd inputs) over 16-row bands, the partials then
// added to the bias in chunk order. Each output of matmul_out_in is one chain of fused
// multiply-adds over 16-lane blocks, the lanes summed in vec.h's order.
#include <cstdint>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels {

// How a Conv1D weight matrix W: (nin, nout) is laid out in memory.
//   rows:  row-major, as Hugging Face stores it.
//   tiles: 16 x 16 tiles, each row-major and contiguous (512 bytes in bf16), ordered by
//          16-row band and then by column: decode reads each band's 16 rows as one
//          sequential stream instead of 16 interleaved ones, which the prefetchers follow
//          better. Needs nin and nout to be multiples of 16. Both layouts give the same bits.
enum class Layout { rows, tiles };
constexpr int64_t kTile = 16;
inline bool can_tile(int64_t nin, int64_t nout) { return nin % kTile == 0 && nout % kTile == 0; }

// Copies row-major `src` (nin, nout) into `dst` in the tiles layout (can_tile must hold).
void pack_tiles(float* dst, const float* src, int64_t nin, int64_t nout);
void pack_tiles(Bf16* dst, const Bf16* src, int64_t nin, int64_t nout);
void pack_tiles(F16* dst, const F16* src, int64_t nin, int64_t nout);

// Conv1D (Hugging Face GPT-2): y = x W + b with W: (nin, nout) in `layout`.
// y: (rows, nout)   x: (rows, nin)   b: (nout) or null.
void matmul_in_out(float* y, const float* x, const float* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout = Layout::rows);
void matmul_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout = Layout::rows);
void matmul_in_out(float* y, const float* x, const F16* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout, Layout layout = Layout::rows);

// nn.Linear layout: y[r][o] = sum_i x[r][i] W[o][i] with W: (nout, nin) row-major (the tied
// output head: logits = x wte^T). Threads split the outputs.
void matmul_out_in(float* y, const float* x, const float* w, int64_t rows, int64_t nin,
                   int64_t nout);
void matmul_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                   int64_t nout);
void matmul_out_in(float* y, const float* x, const F16* w, int64_t rows, int64_t nin, int64_t nout);

}  // namespace tinylm::kernels
