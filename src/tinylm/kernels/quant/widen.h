#pragma once
// Widening the integers of ggml's blocks to f32x16 (exact: small integers and fp16 scales are
// floats without rounding), written per level beside kernels/cpu/vec.h.
//
// Include only from kernel sources, after kernels/cpu/vec.h.
#include <cstdint>
#include <cstring>

#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
// 16 int8 as floats.
TINYLM_INLINE f32x16 widen_i8(const int8_t* p) {
  const __m512i i =
      _mm512_maskz_cvtepi8_epi32(kAll16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm512_maskz_cvtepi32_ps(kAll16, i)};
}
// A Q4_0 block's 32 weights, (q - 8) d: the 16 values (k - 8) d (exact products) form a table
// in one register, and each nibble picks its weight from it (a permute takes the low four bits
// of each lane's index): no int -> float conversions.
TINYLM_INLINE void q4_weights(const uint8_t* qs, f32x16 d, f32x16& lo, f32x16& hi) {
  const __m512 iota = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  const __m512 table = _mm512_mul_ps(iota, d.v);
  const __m512i b =
      _mm512_maskz_cvtepu8_epi32(kAll16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  lo = {_mm512_maskz_permutexvar_ps(kAll16, b, table)};
  hi = {_mm512_maskz_permutexvar_ps(kAll16, _mm512_maskz_srli_epi32(kAll16, b, 4), table)};
}
// table[d] in every lane: a broadcast load, no shuffle.
TINYLM_INLINE f32x16 splat_scale(const uint8_t* d, const float* table) {
  uint16_t h;
  std::memcpy(&h, d, 2);
  return {_mm512_maskz_broadcastss_ps(kAll16, _mm_load_ss(table + h))};
}
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX2
TINYLM_INLINE f32x16 widen_i8(const int8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)),
          _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)))};
}
TINYLM_INLINE void q4_weights(const uint8_t* qs, f32x16 d, f32x16& lo, f32x16& hi) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
  // q - 8 for all 32 weights as signed bytes, then widened and multiplied (exact).
  const __m128i l = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
  const __m128i h = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
  const auto half = [&](__m128i bytes) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), d.lo);
  };
  lo = {half(l), half(_mm_srli_si128(l, 8))};
  hi = {half(h), half(_mm_srli_si128(h, 8))};
}
TINYLM_INLINE f32x16 splat_scale(const uint8_t* d, const float* table) {
  uint16_t h;
  std::memcpy(&h, d, 2);
  const __m256 v = _mm256_broadcast_ss(table + h);
  return {v, v};
}
#else
TINYLM_INLINE f32x16 widen_i8(const int8_t* p) {
  float f[16];
  for (int i = 0; i < 16; ++i) f[i] = static_cast<float>(p[i]);
  return load(f);
}
TINYLM_INLINE void q4_weights(const uint8_t* qs, f32x16 d, f32x16& lo, f32x16& hi) {
  float l[16], h[16];
  for (int i = 0; i < 16; ++i) {
    l[i] = static_cast<float>((qs[i] & 15) - 8);
    h[i] = static_cast<float>((qs[i] >> 4) - 8);
  }
  lo = load(l) * d;
  hi = load(h) * d;
}
TINYLM_INLINE f32x16 splat_scale(const uint8_t* d, const float* table) {
  return splat(table[d[0] | (d[1] << 8)]);
}
#endif

TINYLM_LEVEL_END
