#pragma once
// Products of f32 activation rows with ggml-quantized weight matrices (Q8_0, Q4_0; the k-quants
// Q6_K, Q4_K, Q5_K, which llama.cpp's files hold): GPT-2 inference where each weight is read once
// per token, so decode moves 8.5, 4.5, 6.56, 4.5 or 5.5 bits per weight instead of 16 or 32.
//
// Layout: ggml's, which is GGUF's bytes: W (nout, nin) is nout rows of nin / 32 blocks, the
// blocks running along the input dimension (the nn.Linear layout; a Hugging Face Conv1D weight
// (nin, nout) is stored transposed). nin must be a multiple of the block's weights, 32 (256 for
// the k-quants; else Error).
//
// Contract: row-invariant, and exactly an f32 product over the dequantized weights:
//   y[r][o] = hsum(chain) + (b ? b[o] : 0), chain = fma(x[r][i..i+15], W'[o][i..i+15], chain)
//   over i = 0, 16, 32, ... from zero, W' = q * d for Q8_0 and (q - 8) * d for Q4_0 (exact in
//   f32), (d * s) * (q - 32) for Q6_K and (d * sc) * q - dmin * m for Q4_K / Q5_K (rounded in
//   f32, as blocks.h states), hsum in vec.h's fixed order;
// the bits that kernels/matmul/stream.h's f32 matmul_out_in gives on the dequantized matrix,
// then the bias added. The same at every level, any thread count, and for a row computed
// alone (decode) or among others (prefill), where each dequantized block is reused across rows.
#include <cstdint>

#include "tinylm/core/dtype.h"
#include "tinylm/kernels/quant/blocks.h"

namespace tinylm::kernels {

// y: (rows, nout)   x: (rows, nin)   w: nout * nin / 32 blocks   b: (nout) or null.
void quant_matmul(float* y, const float* x, const BlockQ8_0* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout);
void quant_matmul(float* y, const float* x, const BlockQ4_0* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout);
void quant_matmul(float* y, const float* x, const BlockQ6_K* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout);
void quant_matmul(float* y, const float* x, const BlockQ4_K* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout);
void quant_matmul(float* y, const float* x, const BlockQ5_K* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout);
// The same on untyped blocks of dtype t (q8_0, q4_0 or a k-quant, else Error).
void quant_matmul(DType t, float* y, const float* x, const void* w, const float* b, int64_t rows,
                  int64_t nin, int64_t nout);

}  // namespace tinylm::kernels
