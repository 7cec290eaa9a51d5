#pragma once
// Element types and the conversions between them. Half-precision conversions round to
// nearest, ties to even, as IEEE 754 and every hardware converter do; NaN stays NaN.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tinylm {

// q8_0, q4_0 and the k-quants q6_k, q4_k, q5_k are ggml's block types (kernels/quant/blocks.h):
// 32 (256 for the k-quants) weights share scales, so they have no size per element. dtype_size
// throws for them; a count of elements becomes bytes through storage_bytes, which also rejects
// counts that are not whole blocks. The k-quants are read from GGUF files only: tinylm has no
// quantizer for them.
enum class DType : uint8_t { f32, f16, bf16, i32, f64, q8_0, q4_0, q6_k, q4_k, q5_k };

size_t dtype_size(DType t);            // bytes per element; throws Error for block types
std::string_view dtype_name(DType t);  // "f32", "f16", ..., "q8_0", "q4_0", "q6_k", "q4_k", "q5_k"
DType parse_dtype(std::string_view name);  // the names above; throws Error otherwise

bool is_quantized(DType t);         // a block type (q8_0, q4_0, q6_k, q4_k, q5_k)
int64_t dtype_block_size(DType t);  // elements per block: 32 (256 for the k-quants), else 1
size_t dtype_block_bytes(DType t);  // bytes per block: 34 (q8_0), 18 (q4_0), 210 (q6_k), 144
                                    // (q4_k), 176 (q5_k), else dtype_size
// Bytes of `numel` elements of t; throws Error when numel is negative or not a whole number of
// blocks, or the size overflows.
size_t storage_bytes(DType t, int64_t numel);

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bfloat16 is the top half of a float32: rounding adds half an ulp of the kept part plus the
// tie-breaking bit, then truncates.
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_f16(float f);
float f16_to_float(uint16_t h);

// Whole arrays convert through kernels/cast/cast.h, vectorized, with the same results.

}  // namespace tinylm
