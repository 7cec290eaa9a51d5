#pragma once
// kernels/cpu/vec.h at the AVX2 level: two ymm registers per vector, lanes [0, 8) and [8, 16).
#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "tinylm/kernels/cpu/half.h"
#include "tinylm/kernels/cpu/level.h"

TINYLM_LEVEL_BEGIN

#include "tinylm/kernels/cpu/vec_x86.h"

struct f32x16 {
  __m256 lo, hi;
};
struct f64x8 {
  __m256d lo, hi;
};

// All-ones in the 32-bit lanes i < n of a ymm register (n may be out of [0, 8]).
TINYLM_INLINE __m256i first_lanes8(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 0   ? 0
                                                               : n > 8 ? 8
                                                                       : n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// The same for the 64-bit lanes i < n of a ymm register of doubles.
TINYLM_INLINE __m256i first_lanes4(int64_t n) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n < 0   ? 0
                                               : n > 4 ? 4
                                                       : n),
                            _mm256_setr_epi64x(0, 1, 2, 3));
}

TINYLM_INLINE f32x16 splat(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
// x as it is, made in registers: a loaded vector that several multiply-adds read is then loaded
// once, not folded into each of them as a memory operand.
TINYLM_INLINE f32x16 in_register(f32x16 x) {
  asm("" : "+x"(x.lo), "+x"(x.hi));
  return x;
}
TINYLM_INLINE f32x16 load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
TINYLM_INLINE __m256 widen_bf16x8(const Bf16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
TINYLM_INLINE f32x16 load(const Bf16* p) { return {widen_bf16x8(p), widen_bf16x8(p + 8)}; }
TINYLM_INLINE f32x16 load(const F16* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
TINYLM_INLINE void store(float* p, f32x16 x) {
  _mm256_storeu_ps(p, x.lo);
  _mm256_storeu_ps(p + 8, x.hi);
}
// Eight floats rounded to bf16 (nearest even, NaN kept quiet) in the low 16 bits of each lane.
TINYLM_INLINE __m256i round_bf16x8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  // |u| > inf as signed integers: the magnitudes are below 2^31.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}
TINYLM_INLINE void store(Bf16* p, f32x16 x) {
  // packus interleaves the 128-bit halves: [lo0 hi0 lo1 hi1] -> reorder the 64-bit quarters.
  const __m256i packed = _mm256_packus_epi32(round_bf16x8(x.lo), round_bf16x8(x.hi));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permute4x64_epi64(packed, 0xd8));
}
TINYLM_INLINE void store(F16* p, f32x16 x) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x.lo, kRound));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(x.hi, kRound));
}
// Masked loads and stores never touch the memory of the lanes they leave out. Whole vectors
// take the plain forms: AMD's cores run a masked store as a microcoded sequence many times
// slower than a store.
TINYLM_INLINE f32x16 load_n(const float* p, int64_t n) {
  if (n >= 16) return load(p);
  return {_mm256_maskload_ps(p, first_lanes8(n)), _mm256_maskload_ps(p + 8, first_lanes8(n - 8))};
}
TINYLM_INLINE void store_n(float* p, f32x16 x, int64_t n) {
  if (n >= 16) return store(p, x);
  _mm256_maskstore_ps(p, first_lanes8(n), x.lo);
  _mm256_maskstore_ps(p + 8, first_lanes8(n - 8), x.hi);
}

// The arithmetic of both vector types, half by half: GCC's vector operators, which the
// _mm256_add_ps/_pd intrinsics and their kin are defined as.
template <class V>
concept Vector = std::is_same_v<V, f32x16> || std::is_same_v<V, f64x8>;
template <Vector V>
TINYLM_INLINE V operator+(V a, V b) {
  return {a.lo + b.lo, a.hi + b.hi};
}
template <Vector V>
TINYLM_INLINE V operator-(V a, V b) {
  return {a.lo - b.lo, a.hi - b.hi};
}
template <Vector V>
TINYLM_INLINE V operator*(V a, V b) {
  return {a.lo * b.lo, a.hi * b.hi};
}
template <Vector V>
TINYLM_INLINE V operator/(V a, V b) {
  return {a.lo / b.lo, a.hi / b.hi};
}
TINYLM_INLINE f32x16 fma(f32x16 a, f32x16 b, f32x16 c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
TINYLM_INLINE f32x16 max(f32x16 a, f32x16 b) {
  return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)};
}
TINYLM_INLINE f32x16 min(f32x16 a, f32x16 b) {
  return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)};
}
TINYLM_INLINE f32x16 sqrt(f32x16 a) { return {_mm256_sqrt_ps(a.lo), _mm256_sqrt_ps(a.hi)}; }
TINYLM_INLINE f32x16 abs(f32x16 a) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  return {_mm256_andnot_ps(sign, a.lo), _mm256_andnot_ps(sign, a.hi)};
}
TINYLM_INLINE f32x16 select_lt(f32x16 a, f32x16 b, f32x16 x, f32x16 y) {
  return {_mm256_blendv_ps(y.lo, x.lo, _mm256_cmp_ps(a.lo, b.lo, _CMP_LT_OQ)),
          _mm256_blendv_ps(y.hi, x.hi, _mm256_cmp_ps(a.hi, b.hi, _CMP_LT_OQ))};
}

TINYLM_INLINE float hsum(f32x16 x) { return halve(kAdd(x.lo, x.hi), kAdd); }
// out[o] = hsum(a[o]) for o < N, bit for bit: each halving step adds the same lanes in the same
// order, for two vectors at once.
template <int N>
TINYLM_INLINE void hsums(float* out, const f32x16* a) {
  for (int g = 0; g < N; g += 4) {
    const int m = N - g < 4 ? N - g : 4;
    __m256 h[4];  // lanes i + (i + 8)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      h[k] = k < m ? _mm256_add_ps(a[g + k].lo, a[g + k].hi) : _mm256_setzero_ps();
    // Lanes j + (j + 4): vectors k and k + 1's four sums side by side.
    const __m256 u0 = _mm256_add_ps(_mm256_permute2f128_ps(h[0], h[1], 0x20),
                                    _mm256_permute2f128_ps(h[0], h[1], 0x31));
    const __m256 u1 = _mm256_add_ps(_mm256_permute2f128_ps(h[2], h[3], 0x20),
                                    _mm256_permute2f128_ps(h[2], h[3], 0x31));
    // (0 + 2), (1 + 3): half q holds vector q's two, then vector q + 2's two.
    const __m256 c = _mm256_add_ps(_mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 2, 3, 2)));
    // Their sums in lanes 4q and 4q + 2, gathered in vector order.
    const __m256 s = _mm256_add_ps(c, _mm256_shuffle_ps(c, c, _MM_SHUFFLE(2, 3, 0, 1)));
    alignas(16) float v[4];
    _mm_store_ps(v, _mm256_castps256_ps128(
                        _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 4, 2, 6, 0, 0, 0, 0))));
    for (int o = 0; o < m; ++o) out[g + o] = v[o];
  }
}
TINYLM_INLINE float hmax(f32x16 x) { return halve(kMax(x.lo, x.hi), kMax); }

TINYLM_INLINE __m256 scale_pow2x8(__m256 p, __m256 n) {
  const __m256i ni = _mm256_cvttps_epi32(n), h = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
TINYLM_INLINE f32x16 scale_pow2(f32x16 p, f32x16 n) {
  return {scale_pow2x8(p.lo, n.lo), scale_pow2x8(p.hi, n.hi)};
}

TINYLM_INLINE f64x8 splat(double x) { return {_mm256_set1_pd(x), _mm256_set1_pd(x)}; }
TINYLM_INLINE f64x8 load(const double* p) { return {_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}; }
TINYLM_INLINE void store(double* p, f64x8 x) {
  _mm256_storeu_pd(p, x.lo);
  _mm256_storeu_pd(p + 4, x.hi);
}
TINYLM_INLINE f64x8 load_n(const double* p, int64_t n) {
  if (n >= 8) return load(p);
  return {_mm256_maskload_pd(p, first_lanes4(n)), _mm256_maskload_pd(p + 4, first_lanes4(n - 4))};
}
TINYLM_INLINE void store_n(double* p, f64x8 x, int64_t n) {
  if (n >= 8) return store(p, x);
  _mm256_maskstore_pd(p, first_lanes4(n), x.lo);
  _mm256_maskstore_pd(p + 4, first_lanes4(n - 4), x.hi);
}
TINYLM_INLINE f64x8 fma(f64x8 a, f64x8 b, f64x8 c) {
  return {_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)};
}

TINYLM_LEVEL_END
