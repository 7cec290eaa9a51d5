#pragma once
// Widening the integers of ggml's blocks to f32x16 (exact: small integers and fp16 scales are
// floats without rounding), written per level beside kernels/cpu/vec.h.
//
// Include only from kernel sources, after kernels/cpu/vec.h.
#include <cstdint>
#include <cstring>

#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/quant/blocks.h"

TINYLM_LEVEL_BEGIN

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
// 16 int8 as floats.
TINYLM_INLINE f32x16 widen_i8(__m128i b) {
  return {_mm512_maskz_cvtepi32_ps(kAll16, _mm512_maskz_cvtepi8_epi32(kAll16, b))};
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
// Lane i of v in every lane.
TINYLM_INLINE f32x16 lane(f32x16 v, int i) {
  return {_mm512_maskz_permutexvar_ps(kAll16, _mm512_set1_epi32(i), v.v)};
}
// a in lanes 0..7, b in lanes 8..15.
TINYLM_INLINE f32x16 halves(float a, float b) {
  return {_mm512_mask_broadcastss_ps(_mm512_maskz_broadcastss_ps(0x00ff, _mm_set_ss(a)), 0xff00,
                                     _mm_set_ss(b))};
}
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX2
TINYLM_INLINE f32x16 widen_i8(__m128i b) {
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
TINYLM_INLINE f32x16 lane(f32x16 v, int i) {
  const __m256 r = _mm256_permutevar8x32_ps(i < 8 ? v.lo : v.hi, _mm256_set1_epi32(i & 7));
  return {r, r};
}
TINYLM_INLINE f32x16 halves(float a, float b) { return {_mm256_set1_ps(a), _mm256_set1_ps(b)}; }
#endif

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512 || TINYLM_LEVEL == TINYLM_LEVEL_AVX2
// The 16 bytes of four 32-bit words (little-endian), each below 128, as floats.
TINYLM_INLINE f32x16 widen_u32x4(const uint32_t* w) {
  return widen_i8(_mm_setr_epi32(static_cast<int>(w[0]), static_cast<int>(w[1]),
                                 static_cast<int>(w[2]), static_cast<int>(w[3])));
}
TINYLM_INLINE f32x16 widen_i8(const int8_t* p) {
  return widen_i8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// A Q6_K block's 16 group scales d * s (exact products).
TINYLM_INLINE f32x16 q6_scales(const BlockQ6_K& b, const float* table) {
  return widen_i8(b.scales) * splat_scale(b.d, table);
}
// Piece p's 32 values q - 32 as bytes: the low nibbles of 32 bytes shifted right by ls, and
// the bit pairs of 32 bytes shifted right by hs (blocks.h states which bits each weight takes).
TINYLM_INLINE __m256i q6_bytes(const uint8_t* low, const uint8_t* high, int ls, int hs) {
  const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(low));
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high));
  const __m256i lo4 =
      _mm256_and_si256(_mm256_srl_epi16(l, _mm_cvtsi32_si128(ls)), _mm256_set1_epi8(15));
  const __m256i hi2 =
      _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(hs)), _mm256_set1_epi8(3));
  return _mm256_sub_epi8(_mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4)), _mm256_set1_epi8(32));
}
// Weights 32 p .. 32 p + 31 of a Q6_K block: (d * s) * (q - 32) in f32, as ggml's
// dequantize_row_q6_K computes them. sc: q6_scales(b), which an unrolled loop over the pieces
// computes once.
TINYLM_INLINE void q6_weights(const BlockQ6_K& b, int p, f32x16 sc, f32x16& lo, f32x16& hi) {
  const int h = p >> 2, q = p & 3;
  const __m256i v = q6_bytes(b.ql + 64 * h + (q & 1) * 32, b.qh + 32 * h, (q >> 1) * 4, 2 * q);
  lo = widen_i8(_mm256_castsi256_si128(v)) * lane(sc, 8 * h + 2 * q);
  hi = widen_i8(_mm256_extracti128_si256(v, 1)) * lane(sc, 8 * h + 2 * q + 1);
}
// Sub-block p's 32 integers of a Q4_K (qh null) or Q5_K block as bytes, in weight order: the
// low or high nibbles of 32 bytes, and bit p of each qh byte as 16 (blocks.h).
TINYLM_INLINE __m256i k_bytes(const uint8_t* qs, const uint8_t* qh, int p) {
  const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (p / 2)));
  const __m256i q =
      _mm256_and_si256(_mm256_srl_epi16(l, _mm_cvtsi32_si128((p & 1) * 4)), _mm256_set1_epi8(15));
  if (!qh) return q;
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  const __m256i bit =
      _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(p)), _mm256_set1_epi8(1));
  return _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
}
TINYLM_INLINE void k_integers(const uint8_t* qs, const uint8_t* qh, int p, f32x16& lo, f32x16& hi) {
  const __m256i v = k_bytes(qs, qh, p);
  lo = widen_i8(_mm256_castsi256_si128(v));
  hi = widen_i8(_mm256_extracti128_si256(v, 1));
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
TINYLM_INLINE f32x16 lane(f32x16 v, int i) { return splat(v.q[i >> 2][i & 3]); }
TINYLM_INLINE f32x16 halves(float a, float b) {
  float f[16];
  for (int i = 0; i < 16; ++i) f[i] = i < 8 ? a : b;
  return load(f);
}
TINYLM_INLINE f32x16 widen_u32x4(const uint32_t* w) {
  int8_t bytes[16];
  std::memcpy(bytes, w, sizeof bytes);
  return widen_i8(bytes);
}
TINYLM_INLINE f32x16 q6_scales(const BlockQ6_K& b, const float* table) {
  float f[16];
  const float d = table[b.d[0] | (b.d[1] << 8)];
  for (int i = 0; i < 16; ++i) f[i] = static_cast<float>(b.scales[i]) * d;
  return load(f);
}
TINYLM_INLINE void q6_weights(const BlockQ6_K& b, int p, f32x16 sc, f32x16& lo, f32x16& hi) {
  const int h = p >> 2, q = p & 3, ls = (q >> 1) * 4, hs = 2 * q;
  const uint8_t* low = b.ql + 64 * h + (q & 1) * 32;
  const uint8_t* high = b.qh + 32 * h;
  float f[32];
  for (int i = 0; i < 32; ++i)
    f[i] = static_cast<float>(((low[i] >> ls & 15) | (high[i] >> hs & 3) << 4) - 32);
  lo = load(f) * lane(sc, 8 * h + 2 * q);
  hi = load(f + 16) * lane(sc, 8 * h + 2 * q + 1);
}
TINYLM_INLINE void k_integers(const uint8_t* qs, const uint8_t* qh, int p, f32x16& lo, f32x16& hi) {
  float f[32];
  for (int l = 0; l < 32; ++l) {
    const int low = qs[32 * (p / 2) + l] >> 4 * (p & 1) & 15;
    f[l] = static_cast<float>(low | (qh ? (qh[l] >> p & 1) << 4 : 0));
  }
  lo = load(f);
  hi = load(f + 16);
}
#endif

// The 8 sub-blocks' d * sc in lanes 0..7 and -(dmin * m) in lanes 8..15 of a Q4_K / Q5_K block
// (exact products, (-dmin) * m, so a zero min keeps the sign a subtraction would give): the 6-bit
// scales and mins unpacked as k_scale_min reads them, four at a time in 32-bit words.
template <class Block>
TINYLM_INLINE f32x16 k_scales(const Block& b, const float* table) {
  uint32_t u[3];
  std::memcpy(u, b.scales, sizeof u);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint32_t s[4] = {u[0] & kLow6,                                     // sc 0..3
                         (u[2] & kLow4) | (u[0] >> 6 & kLow2) << 4,        // sc 4..7
                         u[1] & kLow6,                                     // m 0..3
                         (u[2] >> 4 & kLow4) | (u[1] >> 6 & kLow2) << 4};  // m 4..7
  return widen_u32x4(s) *
         halves(table[b.d[0] | (b.d[1] << 8)], -table[b.dmin[0] | (b.dmin[1] << 8)]);
}
// Sub-block p's 32 weights of a Q4_K (qh null) / Q5_K block: (d * sc) * q - dmin * m, as
// blocks.h states. The product is exact, so one fused multiply-add rounds as the product and
// the difference do. s: k_scales.
TINYLM_INLINE void k_weights(const uint8_t* qs, const uint8_t* qh, f32x16 s, int p, f32x16& lo,
                             f32x16& hi) {
  const f32x16 d1 = lane(s, p), minus_m1 = lane(s, 8 + p);
  k_integers(qs, qh, p, lo, hi);
  lo = fma(lo, d1, minus_m1);
  hi = fma(hi, d1, minus_m1);
}

TINYLM_LEVEL_END
