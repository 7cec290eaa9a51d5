#pragma once
// Bulk rounding of float buffers to the half types, for the mixed-precision training path:
// weights are cast once per step and activations at each matrix-product input. Vectorized and
// split across threads; both round to nearest even exactly as core/dtype.h does.
#include <cstdint>
#include <cstring>

#include "tinylm/kernels/half.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

// dst[i] = bf16(src[i]).
void cast_to_bf16(Bf16* dst, const float* src, int64_t n);
// dst[i] = float(f16(src[i])): values rounded to f16 (overflowing to +-inf beyond 65504) but
// kept as float, so the f32 matrix product consumes exactly the f16 values.
void round_to_f16(float* dst, const float* src, int64_t n);

// 16 lanes to bf16, round to nearest even, NaN kept quiet (float_to_bf16 lane by lane).
inline void store_bf16x16(Bf16* dst, simd::f32x16 v) {
  using u32x16 = uint32_t __attribute__((vector_size(64)));
  using u16x16 = uint16_t __attribute__((vector_size(32)));
  u32x16 u;
  std::memcpy(&u, &v, sizeof u);
  const u32x16 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const u32x16 nan = (u >> 16) | 0x0040u;
  const u32x16 r = (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
  const u16x16 h = __builtin_convertvector(r, u16x16);
  std::memcpy(dst, &h, sizeof h);
}

}  // namespace tinylm::kernels
