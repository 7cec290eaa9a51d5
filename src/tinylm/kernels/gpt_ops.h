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

// Conv1D (Hugging Face GPT-2) layout: y = x W + b with W: (nin, nout) row-major.
// y: (rows, nout)   x: (rows, nin)   b: (nout) or null. Threads split the output columns.
template <class W>
void matmul_in_out(float* y, const float* x, const W* w, const float* b, int64_t rows,
                   int64_t nin, int64_t nout);

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
