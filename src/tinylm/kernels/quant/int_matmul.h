#pragma once
// The Q8_0 and Q4_0 products with the activations quantized too, as ggml computes its own: each
// row of x is quantized per block of 32 to Q8_0 (quantize_q8_0's bytes), and each block's 32
// products are integer sums, scaled once. An option beside matmul.h's f32 activations: x is
// rounded to 8 bits (a step of 1/127 of its block's largest magnitude), and in return a weight
// costs a quarter of the arithmetic, which lets decode reach the memory's limit where widening
// every weight to f32 could not (AVX2).
//
// Contract, for row r, output o and block k (weights 32 k .. 32 k + 31):
//   P[k][l] = sum of qw[j] * qx[j] over j = 4 l .. 4 l + 3 (l < 8), in int32 (exact),
//     qw the weight's integers (q for Q8_0, q - 8 for Q4_0), qx the row's Q8_0 integers;
//   s[k] = dw[k] * dx[k], the two fp16 scales' product (exact in f32);
//   lane L < 16 of one chain takes blocks 2 m + L / 8 and partial sums L % 8:
//     chain[L] = fma(float(P[2 m + L / 8][L % 8]), s[2 m + L / 8], chain[L]) over m = 0, 1, ...
//     from zero (an odd count of blocks leaves lanes 8..15 out of the last step);
//   y[r][o] = hsum(chain) + (b ? b[o] : 0), hsum in vec.h's fixed order.
// The same bits at every level, for any thread count, and for a row computed alone (decode) or
// among others (prefill).
#include <cstdint>

#include "tinylm/core/dtype.h"

namespace tinylm::kernels {

// y: (rows, nout)   x: (rows, nin)   w: q8_0 or q4_0 blocks (else Error), nout rows of nin / 32
// (ggml's layout, as matmul.h)   b: (nout) or null. nin: a positive multiple of 32 (else Error).
void quant_matmul_int8(DType t, float* y, const float* x, const void* w, const float* b,
                       int64_t rows, int64_t nin, int64_t nout);

}  // namespace tinylm::kernels
