#pragma once
// The Q8_0 and Q4_0 products with the activations quantized too, as ggml computes its own: each
// row of x is quantized per block of 32 to Q8_0 (quantize_q8_0's bytes), and each block's 32
// products are integer sums, scaled once. An option beside matmul.h's f32 activations: x is
// rounded to 8 bits (a step of 1/127 of its block's largest magnitude), and in return a weight
// costs a quarter of the arithmetic, which lets decode reach the memory's limit where widening
// every weight to f32 could not (AVX2).
//
// Q8_0 weights are read in ggml's layout. Contract, for row r, output o and block k (weights
// 32 k .. 32 k + 31):
//   P[k][l] = sum of qw[j] * qx[j] over j = 4 l .. 4 l + 3 (l < 8), in int32 (exact),
//     qw the weight's integers, qx the row's Q8_0 integers;
//   s[k] = dw[k] * dx[k], the two fp16 scales' product (exact in f32);
//   lane L < 16 of one chain takes blocks 2 m + L / 8 and partial sums L % 8:
//     chain[L] = fma(float(P[2 m + L / 8][L % 8]), s[2 m + L / 8], chain[L]) over m = 0, 1, ...
//     from zero (an odd count of blocks leaves lanes 8..15 out of the last step);
//   y[r][o] = hsum(chain) + (b ? b[o] : 0), hsum in vec.h's fixed order.
//
// Q4_0 weights are first packed (pack_q4_0x16): 16 outputs' blocks interleaved, so that a
// register's lanes are outputs and a block's 32 products are one integer sum (which a layout
// of whole blocks would have to reduce across lanes, at AVX2 more work than the products).
// Contract, with n the weight's nibbles:
//   P[k] = sum of (n[j] - 8) * qx[j] over j < 32, in int32 (exact);
//   chain = fma(float(P[k]), dw[k] * dx[k], chain) over k = 0, 1, ... from zero;
//   y[r][o] = chain + (b ? b[o] : 0).
//
// Both: the same bits at every level, for any thread count, and for a row computed alone
// (decode) or among others (prefill).
#include <cstddef>
#include <cstdint>

#include "tinylm/core/dtype.h"

namespace tinylm::kernels {

// Q4_0 packed for 16 outputs: block k of outputs 16 g .. 16 g + 15. A matrix is its groups in
// turn, each its nin / 32 blocks; the last group's missing outputs are zero blocks.
struct BlockQ4_0x16 {
  uint8_t d[16][2];   // output o's fp16 scale, little-endian
  uint8_t qs[4][64];  // qs[s][4 o + i] = output o's qs[4 s + i] (weights 4 s + i and 4 s + i + 16)
};
static_assert(sizeof(BlockQ4_0x16) == 288 && alignof(BlockQ4_0x16) == 1);

// Bytes of (nout, nin) weights packed; nin: a positive multiple of 32 (else Error).
size_t q4_0x16_bytes(int64_t nin, int64_t nout);
// w: nout rows of nin / 32 Q4_0 blocks (ggml's layout) into out (q4_0x16_bytes).
void pack_q4_0x16(void* out, const void* w, int64_t nin, int64_t nout);

// y: (rows, nout)   x: (rows, nin)   w: q8_0 blocks (ggml's layout, as matmul.h) or q4_0 packed
// (pack_q4_0x16); other types are an Error   b: (nout) or null. nin: a positive multiple of 32
// (else Error).
void quant_matmul_int8(DType t, float* y, const float* x, const void* w, const float* b,
                       int64_t rows, int64_t nin, int64_t nout);

}  // namespace tinylm::kernels
