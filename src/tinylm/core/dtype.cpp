#include "tinylm/core/dtype.h"

#include <cstdint>

#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"

namespace tinylm {

namespace {
constexpr EnumName<DType> kDTypeNames[] = {
    {DType::f32, "f32"},   {DType::f16, "f16"},   {DType::bf16, "bf16"}, {DType::i32, "i32"},
    {DType::f64, "f64"},   {DType::q8_0, "q8_0"}, {DType::q4_0, "q4_0"}, {DType::q6_k, "q6_k"},
    {DType::q4_k, "q4_k"}, {DType::q5_k, "q5_k"}};
}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::f64:
      return 8;
    case DType::q8_0:
    case DType::q4_0:
    case DType::q6_k:
    case DType::q4_k:
    case DType::q5_k:
      fail("[dtype_size] ", dtype_name(t),
           " is a block type with no size per element: use storage_bytes");
  }
  fail("[dtype_size] invalid dtype ", static_cast<int>(t));
}

bool is_quantized(DType t) {
  return t == DType::q8_0 || t == DType::q4_0 || t == DType::q6_k || t == DType::q4_k ||
         t == DType::q5_k;
}

int64_t dtype_block_size(DType t) {
  if (t == DType::q6_k || t == DType::q4_k || t == DType::q5_k) return 256;
  return is_quantized(t) ? 32 : 1;
}

size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::q8_0:
      return 2 + 32;  // fp16 scale + 32 int8
    case DType::q4_0:
      return 2 + 16;  // fp16 scale + 32 nibbles
    case DType::q6_k:
      return 128 + 64 + 16 + 2;  // low nibbles, high bit pairs, 16 int8 scales, fp16 scale
    case DType::q4_k:
      return 2 + 2 + 12 + 128;  // fp16 scale and min, 6-bit scales and mins, nibbles
    case DType::q5_k:
      return 2 + 2 + 12 + 32 + 128;  // as q4_k, and a fifth bit per weight
    default:
      return dtype_size(t);
  }
}

size_t storage_bytes(DType t, int64_t numel) {
  const int64_t block = dtype_block_size(t);
  check(numel >= 0, "[storage_bytes] negative element count ", numel);
  check(numel % block == 0, "[storage_bytes] ", numel, " elements of ", dtype_name(t),
        " are not a whole number of ", block, "-element blocks");
  const auto blocks = static_cast<size_t>(numel / block);
  const size_t bytes = dtype_block_bytes(t);
  check(blocks <= SIZE_MAX / bytes, "[storage_bytes] ", numel, " elements of ", dtype_name(t),
        " overflow a size");
  return blocks * bytes;
}

std::string_view dtype_name(DType t) {
  const std::string_view name = name_of(kDTypeNames, t, {});
  if (name.empty()) fail("[dtype_name] invalid dtype ", static_cast<int>(t));
  return name;
}

DType parse_dtype(std::string_view name) { return parse_of(kDTypeNames, name, "dtype"); }

uint16_t float_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  const int exp = static_cast<int>(abs >> 23) - 127;
  if (exp >= -14) {  // normal half: drop 13 mantissa bits with round-to-nearest-even
    uint32_t h = ((static_cast<uint32_t>(exp + 15)) << 10) | ((abs >> 13) & 0x3ffu);
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
      ++h;  // a carry may bump the exponent: fine
    return static_cast<uint16_t>(sign | h);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: rounds to zero
  // Subnormal half: the value is mant * 2^(exp-23) with the implicit bit; the result counts
  // units of 2^-24, so shift right by (-14 - exp) + 13.
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24
  uint32_t h = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  // A NaN comes out quiet (payload kept), as IEEE 754 and the F16C converter do.
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u));
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  int e = 113;  // normalise the subnormal
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3ffu) << 13));
}

}  // namespace tinylm
