#pragma once
// The fixed-width vectors every kernel is written against: f32x16 (16 float lanes) and f64x8
// (8 double lanes), whatever the register width of the level being compiled, with the same
// operations at every level: loads and stores (widening bf16/f16 loads and rounding stores;
// load_n/store_n for the first n lanes, never touching memory past them), + - * /, fma (one
// rounding), max, min, sqrt, abs, select_lt, lane sums and maxima in one fixed order (hsum, hmax;
// hsums, several vectors' lane sums at once, as hsum adds them), scale_pow2 for exp, and
// in_register (a vector as it is, which the compiler may no longer reload from memory). Because
// the lane count and every order are fixed, a kernel written once computes the same bits at every
// level. kernels/cpu/vec_math.h adds exp and tanh.
//
// Include only from kernel sources, after their other includes (see kernels/cpu/level.h).
#include <cstring>

#include "tinylm/kernels/cpu/level.h"

#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
#include "tinylm/kernels/cpu/vec_avx512.h"
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX2
#include "tinylm/kernels/cpu/vec_avx2.h"
#else
#include "tinylm/kernels/cpu/vec_generic.h"
#endif

TINYLM_LEVEL_BEGIN

inline constexpr int64_t kLanes = 16;  // floats per f32x16

TINYLM_INLINE f32x16 operator+(f32x16 a, float b) { return a + splat(b); }
TINYLM_INLINE f32x16 operator+(float a, f32x16 b) { return splat(a) + b; }
TINYLM_INLINE f32x16 operator-(f32x16 a, float b) { return a - splat(b); }
TINYLM_INLINE f32x16 operator-(float a, f32x16 b) { return splat(a) - b; }
TINYLM_INLINE f32x16 operator*(f32x16 a, float b) { return a * splat(b); }
TINYLM_INLINE f32x16 operator*(float a, f32x16 b) { return splat(a) * b; }
TINYLM_INLINE f32x16 operator/(float a, f32x16 b) { return splat(a) / b; }
TINYLM_INLINE f32x16 operator/(f32x16 a, float b) { return a / splat(b); }
TINYLM_INLINE f32x16& operator+=(f32x16& a, f32x16 b) { return a = a + b; }
TINYLM_INLINE f32x16 fma(float a, f32x16 b, f32x16 c) { return fma(splat(a), b, c); }

// The first n (1 <= n <= 16) values widened, zero in the other lanes: half-precision ones, and
// floats at the generic level (the x86 levels mask their loads instead).
template <class T>
TINYLM_INLINE f32x16 load_n(const T* p, int64_t n) {
  T h[kLanes] = {};
  std::memcpy(h, p, static_cast<size_t>(n) * sizeof(T));
  return load(h);
}

// x in the first n lanes (1 <= n <= 16), zero in the others.
TINYLM_INLINE f32x16 splat_n(float x, int64_t n) {
  float lanes[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) lanes[i] = x;
  return load_n(lanes, n);
}

TINYLM_INLINE f64x8 operator*(f64x8 a, double b) { return a * splat(b); }
TINYLM_INLINE f64x8 operator*(double a, f64x8 b) { return splat(a) * b; }
TINYLM_INLINE f64x8& operator+=(f64x8& a, f64x8 b) { return a = a + b; }

TINYLM_LEVEL_END
