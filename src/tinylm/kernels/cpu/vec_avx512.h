#pragma once
// kernels/cpu/vec.h at the AVX-512 level: one zmm register per vector.
#include <immintrin.h>

#include <cstdint>

#include "tinylm/kernels/cpu/half.h"
#include "tinylm/kernels/cpu/level.h"

TINYLM_LEVEL_BEGIN

#include "tinylm/kernels/cpu/vec_x86.h"

struct f32x16 {
  __m512 v;
};
struct f64x8 {
  __m512d v;
};

// GCC 12 warns that the unmasked forms of many AVX-512 intrinsics read an undefined value (their
// pass-through operand); the zero-masked forms with every lane selected are the same
// instructions without the warning.
constexpr __mmask16 kAll16 = 0xffff;

TINYLM_INLINE __mmask16 first_lanes16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

TINYLM_INLINE f32x16 splat(float x) { return {_mm512_set1_ps(x)}; }
// x as it is, made in a register: a loaded vector that several multiply-adds read is then loaded
// once, not folded into each of them as a memory operand.
TINYLM_INLINE f32x16 in_register(f32x16 x) {
  asm("" : "+v"(x.v));
  return x;
}
TINYLM_INLINE f32x16 load(const float* p) { return {_mm512_loadu_ps(p)}; }
TINYLM_INLINE f32x16 load(const Bf16* p) {
  const __m512i wide =
      _mm512_maskz_cvtepu16_epi32(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return {_mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, wide, 16))};
}
TINYLM_INLINE f32x16 load(const F16* p) {
  return {_mm512_maskz_cvtph_ps(kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
TINYLM_INLINE void store(float* p, f32x16 x) { _mm512_storeu_ps(p, x.v); }
TINYLM_INLINE void store(Bf16* p, f32x16 x) {
  const __m512i u = _mm512_castps_si512(x.v);
  const __m512i odd =
      _mm512_and_si512(_mm512_maskz_srli_epi32(kAll16, u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_maskz_srli_epi32(
      kAll16, _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
  const __m512i quiet =
      _mm512_or_si512(_mm512_maskz_srli_epi32(kAll16, u, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(p),
      _mm512_maskz_cvtepi32_epi16(kAll16, _mm512_mask_blend_epi32(nan, rounded, quiet)));
}
TINYLM_INLINE void store(F16* p, f32x16 x) {
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(p),
      _mm512_maskz_cvtps_ph(kAll16, x.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
TINYLM_INLINE f32x16 load_n(const float* p, int64_t n) {
  return {_mm512_maskz_loadu_ps(first_lanes16(n), p)};
}
TINYLM_INLINE void store_n(float* p, f32x16 x, int64_t n) {
  _mm512_mask_storeu_ps(p, first_lanes16(n), x.v);
}

TINYLM_INLINE f32x16 operator+(f32x16 a, f32x16 b) { return {_mm512_add_ps(a.v, b.v)}; }
TINYLM_INLINE f32x16 operator-(f32x16 a, f32x16 b) { return {_mm512_sub_ps(a.v, b.v)}; }
TINYLM_INLINE f32x16 operator*(f32x16 a, f32x16 b) { return {_mm512_mul_ps(a.v, b.v)}; }
TINYLM_INLINE f32x16 operator/(f32x16 a, f32x16 b) { return {_mm512_div_ps(a.v, b.v)}; }
TINYLM_INLINE f32x16 fma(f32x16 a, f32x16 b, f32x16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
TINYLM_INLINE f32x16 max(f32x16 a, f32x16 b) { return {_mm512_maskz_max_ps(kAll16, a.v, b.v)}; }
TINYLM_INLINE f32x16 min(f32x16 a, f32x16 b) { return {_mm512_maskz_min_ps(kAll16, a.v, b.v)}; }
TINYLM_INLINE f32x16 sqrt(f32x16 a) { return {_mm512_maskz_sqrt_ps(kAll16, a.v)}; }
TINYLM_INLINE f32x16 abs(f32x16 a) { return {_mm512_abs_ps(a.v)}; }
// b where a < b, else c.
TINYLM_INLINE f32x16 select_lt(f32x16 a, f32x16 b, f32x16 x, f32x16 y) {
  return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ), y.v, x.v)};
}

TINYLM_INLINE __m256 lower8(f32x16 x) { return _mm512_maskz_extractf32x8_ps(0xff, x.v, 0); }
TINYLM_INLINE __m256 upper8(f32x16 x) { return _mm512_maskz_extractf32x8_ps(0xff, x.v, 1); }
TINYLM_INLINE float hsum(f32x16 x) { return halve(kAdd(lower8(x), upper8(x)), kAdd); }
// Two vectors' 128-bit blocks [x.I, x.J, z.K, z.L]. (The maskz forms here and in hsums: GCC 12
// warns that the plain ones' undefined source may be used uninitialized.)
template <int I, int J, int K, int L>
TINYLM_INLINE __m512 blocks_of(__m512 x, __m512 z) {
  return _mm512_maskz_shuffle_f32x4(kAll16, x, z, _MM_SHUFFLE(L, K, J, I));
}

// out[o] = hsum(a[o]) for o < N, bit for bit: each halving step adds the same lanes in the same
// order, for two or four vectors at once (a third of the instructions of N hsums).
template <int N>
TINYLM_INLINE void hsums(float* out, const f32x16* a) {
#pragma GCC unroll 4
  for (int g = 0; g < N; g += 8) {
    const int m = N - g < 8 ? N - g : 8;
    // Lanes i + (i + 8): vectors 2k and 2k + 1's halves side by side.
    __m512 h[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512 x = 2 * k < m ? a[g + 2 * k].v : _mm512_setzero_ps();
      const __m512 z = 2 * k + 1 < m ? a[g + 2 * k + 1].v : _mm512_setzero_ps();
      h[k] = _mm512_add_ps(blocks_of<0, 1, 0, 1>(x, z), blocks_of<2, 3, 2, 3>(x, z));
    }
    // Lanes j + (j + 4): vector 4p + q's four sums in block q of p.
    const __m512 p0 =
        _mm512_add_ps(blocks_of<0, 2, 0, 2>(h[0], h[1]), blocks_of<1, 3, 1, 3>(h[0], h[1]));
    const __m512 p1 =
        _mm512_add_ps(blocks_of<0, 2, 0, 2>(h[2], h[3]), blocks_of<1, 3, 1, 3>(h[2], h[3]));
    // (0 + 2), (1 + 3): block q holds vector q's two, then vector q + 4's two.
    const __m512 c =
        _mm512_add_ps(_mm512_maskz_shuffle_ps(kAll16, p0, p1, _MM_SHUFFLE(1, 0, 1, 0)),
                      _mm512_maskz_shuffle_ps(kAll16, p0, p1, _MM_SHUFFLE(3, 2, 3, 2)));
    // Their sums in lanes 4q and 4q + 2, gathered in vector order.
    const __m512 s =
        _mm512_add_ps(c, _mm512_maskz_shuffle_ps(kAll16, c, c, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256 sums =
        _mm512_maskz_extractf32x8_ps(0xff, _mm512_maskz_permutexvar_ps(kAll16, order, s), 0);
    if (m == 8) {
      _mm256_storeu_ps(out + g, sums);
    } else {  // (a whole store, then copies: loads after a masked store wait for it to retire)
      alignas(32) float v[8];
      _mm256_store_ps(v, sums);
      for (int o = 0; o < m; ++o) out[g + o] = v[o];
    }
  }
}
TINYLM_INLINE float hmax(f32x16 x) { return halve(kMax(lower8(x), upper8(x)), kMax); }

// p * 2^n for integral n in [-252, 254] (p * 2^h * 2^(n-h), h = n >> 1, so that n beyond the
// exponent range of one factor stays exact).
TINYLM_INLINE f32x16 scale_pow2(f32x16 p, f32x16 n) {
  const __m512i ni = _mm512_maskz_cvttps_epi32(kAll16, n.v),
                h = _mm512_maskz_srai_epi32(kAll16, ni, 1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 =
      _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, _mm512_add_epi32(h, bias), 23));
  const __m512 s2 = _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll16, _mm512_add_epi32(_mm512_sub_epi32(ni, h), bias), 23));
  return {_mm512_mul_ps(_mm512_mul_ps(p.v, s1), s2)};
}

TINYLM_INLINE f64x8 splat(double x) { return {_mm512_set1_pd(x)}; }
TINYLM_INLINE f64x8 load(const double* p) { return {_mm512_loadu_pd(p)}; }
TINYLM_INLINE void store(double* p, f64x8 x) { _mm512_storeu_pd(p, x.v); }
TINYLM_INLINE f64x8 load_n(const double* p, int64_t n) {
  return {_mm512_maskz_loadu_pd(static_cast<__mmask8>(first_lanes16(n)), p)};
}
TINYLM_INLINE void store_n(double* p, f64x8 x, int64_t n) {
  _mm512_mask_storeu_pd(p, static_cast<__mmask8>(first_lanes16(n)), x.v);
}
TINYLM_INLINE f64x8 operator+(f64x8 a, f64x8 b) { return {_mm512_add_pd(a.v, b.v)}; }
TINYLM_INLINE f64x8 operator-(f64x8 a, f64x8 b) { return {_mm512_sub_pd(a.v, b.v)}; }
TINYLM_INLINE f64x8 operator*(f64x8 a, f64x8 b) { return {_mm512_mul_pd(a.v, b.v)}; }
TINYLM_INLINE f64x8 operator/(f64x8 a, f64x8 b) { return {_mm512_div_pd(a.v, b.v)}; }
TINYLM_INLINE f64x8 fma(f64x8 a, f64x8 b, f64x8 c) { return {_mm512_fmadd_pd(a.v, b.v, c.v)}; }

TINYLM_LEVEL_END
