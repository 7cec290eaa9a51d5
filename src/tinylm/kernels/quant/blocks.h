#pragma once
// ggml's quantized blocks, byte for byte as llama.cpp and GGUF store them: 32 weights share
// one fp16 scale d.
//   Q8_0 (34 bytes): d, then 32 int8 q; weight j = q[j] * d.
//   Q4_0 (18 bytes): d, then 16 bytes qs; weight j = ((qs[j] & 15) - 8) * d and weight
//                    j + 16 = ((qs[j] >> 4) - 8) * d for j < 16.
// d is little-endian fp16 kept as two bytes, so blocks may sit at any address (inside a
// memory-mapped file, 34-byte blocks are only 2-byte aligned, and GGUF promises nothing more).
//
// The quantizers are ggml's reference functions (quantize_row_q8_0_ref, quantize_row_q4_0_ref,
// which llama.cpp uses to write files deterministically), so the same floats give the same
// bytes:
//   Q8_0: amax = max |x| (ggml's MAX macro: a NaN is kept until a later element replaces it),
//         d = amax / 127, id = d != 0 ? 1 / d : 0, q = roundf(x * id) (halves away from zero).
//   Q4_0: m = the first element of largest magnitude, with its sign; d = m / -8,
//         id = d != 0 ? 1 / d : 0, q = min(15, trunc(x * id + 8.5)).
//   The stored d is fp16(d) rounded to nearest even (a NaN becomes sign | 0x7e00, as ggml's
//   converter writes it); id is computed from the f32 d, before that rounding.
// Where ggml's C converts a float outside int8's range to int8 (NaN or inf among the inputs, or
// an id that overflows for scales below ~1e-37) the result is undefined in C; we compute what
// its x86 build does: cvttss2si to int32 (INT32_MIN for NaN and out-of-range values), then the
// low 8 bits.
#include <cstddef>
#include <cstdint>

#include "tinylm/core/dtype.h"

namespace tinylm::kernels {

constexpr int64_t kQuantBlock = 32;  // weights per block (QK8_0 = QK4_0 = 32)

struct BlockQ8_0 {
  uint8_t d[2];  // fp16 scale, little-endian
  int8_t qs[kQuantBlock];
};
struct BlockQ4_0 {
  uint8_t d[2];  // fp16 scale, little-endian
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 1);
static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 1);

// ggml's Q6_K (read only: llama.cpp's quantizer gives it to a tied token_embd in Q4_0 files):
// 256 weights in 16 groups of 16, each group an int8 scale, all one fp16 d; 6-bit q, the low
// four bits in ql, the high two in qh. For each half h (128 weights) and l < 32, with
// L = ql + 64 h, H = qh + 32 h, s = scales + 8 h, g = l / 16:
//   weight 128 h + l      = d * s[g]     * ((L[l]      & 15 | (H[l]      & 3) << 4) - 32)
//   weight 128 h + l + 32 = d * s[g + 2] * ((L[l + 32] & 15 | (H[l] >> 2 & 3) << 4) - 32)
//   weight 128 h + l + 64 = d * s[g + 4] * ((L[l]     >> 4 | (H[l] >> 4 & 3) << 4) - 32)
//   weight 128 h + l + 96 = d * s[g + 6] * ((L[l + 32] >> 4 | (H[l] >> 6)     << 4) - 32)
// each product evaluated left to right in float (dequantize_row_q6_K).
constexpr int64_t kSuperBlock = 256;  // weights per Q6_K block (QK_K)
struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];
  uint8_t qh[kSuperBlock / 4];
  int8_t scales[kSuperBlock / 16];
  uint8_t d[2];  // fp16 scale, little-endian
};
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) == 1);

// ggml's Q4_K and Q5_K (read only: llama.cpp's Q4_K_M / Q5_K_M files mix them with Q6_K): 256
// weights in 8 sub-blocks of 32, each a 6-bit scale sc and a 6-bit min m (k_scale_min), all
// one fp16 d and one fp16 dmin. Sub-block p's 32 weights take the low (p even) or high (p odd)
// nibbles of qs[32 (p / 2) ..], and for Q5_K bit p of qh[0 .. 31] as a fifth bit (16):
//   weight 32 p + l = (d * sc) * q - dmin * m
// in float (dequantize_row_q4_K / _q5_K). The products are exact (11 + 6 + 5 significant bits),
// so only the difference rounds, and a build of ggml that fuses it with the multiply gives the
// same bits.
struct BlockQ4_K {
  uint8_t d[2], dmin[2];  // fp16, little-endian
  uint8_t scales[12];
  uint8_t qs[kSuperBlock / 2];
};
struct BlockQ5_K {
  uint8_t d[2], dmin[2];  // fp16, little-endian
  uint8_t scales[12];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) == 1);
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) == 1);

// Sub-block p's scale and min from the 12 packed bytes (ggml's get_scale_min_k4).
inline void k_scale_min(const uint8_t* q, int p, int& sc, int& m) {
  if (p < 4) {
    sc = q[p] & 63;
    m = q[p + 4] & 63;
  } else {
    sc = (q[p + 4] & 15) | (q[p - 4] >> 6) << 4;
    m = (q[p + 4] >> 4) | (q[p] >> 6) << 4;
  }
}

// Weights per block of each type.
template <class Block>
inline constexpr int64_t kWeights = kQuantBlock;
template <>
inline constexpr int64_t kWeights<BlockQ6_K> = kSuperBlock;
template <>
inline constexpr int64_t kWeights<BlockQ4_K> = kSuperBlock;
template <>
inline constexpr int64_t kWeights<BlockQ5_K> = kSuperBlock;

template <class Block>
inline float block_scale(const Block& b) {
  return f16_to_float(static_cast<uint16_t>(b.d[0] | (b.d[1] << 8)));
}

// Every fp16 value as float, indexed by its bits (f16_to_float, 256 KiB; built on first use):
// the products read a block's scale with one load instead of a conversion (as ggml does).
const float* f16_table();

// n floats (a multiple of 32, else Error) into n / 32 blocks. Large arrays are split across
// threads; the bytes do not depend on it.
void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n);
// n / 32 blocks into n floats (q * d, exact in f32).
void dequantize(const BlockQ8_0* x, float* y, int64_t n);
void dequantize(const BlockQ4_0* x, float* y, int64_t n);
// n / 256 Q6_K (Q4_K, Q5_K) blocks into n floats (n a multiple of 256, else Error).
void dequantize(const BlockQ6_K* x, float* y, int64_t n);
void dequantize(const BlockQ4_K* x, float* y, int64_t n);
void dequantize(const BlockQ5_K* x, float* y, int64_t n);

// The same on untyped storage, for t = q8_0 or q4_0 (dequantize: or a k-quant; else Error);
// `out`/`in` hold storage_bytes(t, n) bytes.
void quantize(DType t, const float* x, void* out, int64_t n);
void dequantize(DType t, const void* in, float* y, int64_t n);

}  // namespace tinylm::kernels
