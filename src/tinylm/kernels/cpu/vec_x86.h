#pragma once
// What the AVX2 and AVX-512 levels' vec.h share; each includes it inside its level region, so
// the intrinsics take that level's target.
#if !defined(TINYLM_LEVEL_NS)
#error "vec_x86.h belongs inside a level region"
#endif

// The lanes of a halved as [0..4) op [4..8), then (0 op 2) op (1 op 3); after the first step
// below ([0..8) op [8..16)), the order of every level's hsum, and of hmax.
template <class Op>
TINYLM_INLINE float halve(__m256 a, Op op) {
  const __m128 b = op(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = op(b, _mm_movehl_ps(b, b));
  return op(c, _mm_shuffle_ps(c, c, 1))[0];
}
constexpr auto kAdd = [](auto a, auto b) { return a + b; };
constexpr auto kMax = [](auto a, auto b) { return a > b ? a : b; };  // max_ps: b if either is NaN
