#pragma once
// exp and tanh on kernels/cpu/vec.h's vectors, written once for every level.
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

// exp(x) lane by lane: x = n ln2 + r with |r| <= ln2/2, Cephes' degree-5 polynomial for e^r
// (about 1 ulp), 2^n built in the exponent field. Inputs are clamped to [-87.3, 88.7], so a
// number gives a finite result of at least ~1e-38 (callers subtract a row maximum, or feed
// tanh); a NaN stays NaN (max and min return their second operand for it). Plain multiplies
// and adds, no fused ones: Cephes' coefficients are fitted for that, and the generic level
// then needs no emulated FMA.
TINYLM_INLINE f32x16 exp(f32x16 x) {
  x = min(splat(88.7f), max(splat(-87.3f), x));
  const f32x16 magic = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const f32x16 n = (x * 1.44269504088896341f + magic) - magic;
  const f32x16 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  f32x16 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  return scale_pow2(p, n);
}

// tanh(u) = 1 - 2 / (e^{2u} + 1): absolute error ~1 ulp of 1; saturates to exactly +-1.
TINYLM_INLINE f32x16 tanh(f32x16 u) { return 1.0f - 2.0f / (exp(u + u) + 1.0f); }

// exp of one float through the vector code (a row's tail gets the bits of its body).
TINYLM_INLINE float exp1(float x) {
  float out[kLanes];
  store(out, exp(splat(x)));
  return out[0];
}

TINYLM_LEVEL_END
