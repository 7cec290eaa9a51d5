// f16 and bf16 from and to f32 bit patterns, in integer arithmetic only: core/dtype.h's scalar
// conversions step for step (round to nearest even; a NaN stays NaN, quiet, its payload kept
// where it fits; past the f16 range +-inf). No float arithmetic, so subnormals come out exact
// on every device whatever its denormal mode, and NaN payloads survive.
uint float_to_bf16(uint u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x0040u) & 0xffffu;  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}

uint bf16_to_float(uint h) { return h << 16; }

uint float_to_f16(uint u) {
  const uint sign = (u >> 16) & 0x8000u;
  const uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
  const int e = int(a >> 23) - 127;
  if (e >= -14) {  // a normal half: drop 13 mantissa bits, ties to even (a carry may bump e)
    uint h = (uint(e + 15) << 10) | ((a >> 13) & 0x3ffu);
    const uint rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) ++h;
    return sign | h;
  }
  if (e < -25) return sign;  // below half the smallest subnormal
  const uint mant = (a & 0x7fffffu) | 0x800000u;
  const uint shift = uint(-e - 1);  // 14..24
  uint h = mant >> shift;
  const uint rest = mant & ((1u << shift) - 1u);
  const uint half_unit = 1u << (shift - 1u);
  if (rest > half_unit || (rest == half_unit && (h & 1u) != 0u)) ++h;
  return sign | h;
}

uint f16_to_float(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu;
  uint mant = h & 0x3ffu;
  if (e == 0x1fu) return sign | 0x7f800000u | (mant << 13) | (mant != 0u ? 0x00400000u : 0u);
  if (e != 0u) return sign | ((e + 112u) << 23) | (mant << 13);
  if (mant == 0u) return sign;
  // A subnormal: normalise (findMSB: the leading bit of mant, 0..9).
  const int msb = findMSB(mant);
  return sign | (uint(103 + msb) << 23) | ((mant << uint(10 - msb)) & 0x3ffu) << 13;
}

// kind 0: f16, 1: bf16.
uint to_half(uint u, uint kind) { return kind == 0u ? float_to_f16(u) : float_to_bf16(u); }
uint from_half(uint h, uint kind) { return kind == 0u ? f16_to_float(h) : bf16_to_float(h); }
