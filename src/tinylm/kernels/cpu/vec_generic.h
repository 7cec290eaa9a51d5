#pragma once
// kernels/cpu/vec.h at the generic level: portable C++ on the compiler's 16-byte vector
// extensions (SSE2 on x86-64, NEON on Arm, scalar code elsewhere), no intrinsics. Fused
// multiply-adds are std::fma lane by lane: exact everywhere, fast where the target has an
// FMA instruction, a library call where it has none.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tinylm/kernels/cpu/half.h"
#include "tinylm/kernels/cpu/level.h"

TINYLM_LEVEL_BEGIN

using v4f = float __attribute__((vector_size(16)));
using v2d = double __attribute__((vector_size(16)));

// Lanes [4 q, 4 q + 4) in part q.
struct f32x16 {
  v4f q[4];
};
struct f64x8 {
  v2d q[4];
};

template <class V, class Op>
TINYLM_INLINE V each(V a, V b, Op op) {
  for (int i = 0; i < 4; ++i) a.q[i] = op(a.q[i], b.q[i]);
  return a;
}

TINYLM_INLINE f32x16 splat(float x) {
  const v4f s = {x, x, x, x};
  return {{s, s, s, s}};
}
TINYLM_INLINE f32x16 in_register(f32x16 x) { return x; }  // (the x86 levels pin it)
TINYLM_INLINE f32x16 load(const float* p) {
  f32x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
TINYLM_INLINE f32x16 load(const Bf16* p) {
  float f[16];
  for (int i = 0; i < 16; ++i) f[i] = bf16_to_float(p[i].bits);
  return load(f);
}
TINYLM_INLINE f32x16 load(const F16* p) {
  float f[16];
  for (int i = 0; i < 16; ++i) f[i] = f16_to_float(p[i].bits);
  return load(f);
}
TINYLM_INLINE void store(float* p, f32x16 x) { std::memcpy(p, &x, sizeof x); }
TINYLM_INLINE void store(Bf16* p, f32x16 x) {
  float f[16];
  store(f, x);
  for (int i = 0; i < 16; ++i) p[i].bits = float_to_bf16(f[i]);
}
TINYLM_INLINE void store(F16* p, f32x16 x) {
  float f[16];
  store(f, x);
  for (int i = 0; i < 16; ++i) p[i].bits = float_to_f16(f[i]);
}
// (load_n of floats: vec.h's, for every 16-lane type.)
TINYLM_INLINE void store_n(float* p, f32x16 x, int64_t n) {
  std::memcpy(p, &x, static_cast<size_t>(n) * sizeof(float));
}

// The arithmetic of both vector types, part by part.
template <class V>
concept Vector = std::is_same_v<V, f32x16> || std::is_same_v<V, f64x8>;
template <Vector V>
TINYLM_INLINE V operator+(V a, V b) {
  return each(a, b, [](auto x, auto y) { return x + y; });
}
template <Vector V>
TINYLM_INLINE V operator-(V a, V b) {
  return each(a, b, [](auto x, auto y) { return x - y; });
}
template <Vector V>
TINYLM_INLINE V operator*(V a, V b) {
  return each(a, b, [](auto x, auto y) { return x * y; });
}
template <Vector V>
TINYLM_INLINE V operator/(V a, V b) {
  return each(a, b, [](auto x, auto y) { return x / y; });
}
TINYLM_INLINE f32x16 fma(f32x16 a, f32x16 b, f32x16 c) {
  return each(a, b, [&c, i = 0](v4f x, v4f y) mutable {
    const v4f z = c.q[i++];
    return v4f{std::fma(x[0], y[0], z[0]), std::fma(x[1], y[1], z[1]), std::fma(x[2], y[2], z[2]),
               std::fma(x[3], y[3], z[3])};
  });
}
// a > b ? a : b lane by lane, as x86's max instructions define it (b when either is NaN).
TINYLM_INLINE f32x16 max(f32x16 a, f32x16 b) {
  return each(a, b, [](v4f x, v4f y) { return x > y ? x : y; });
}
TINYLM_INLINE f32x16 min(f32x16 a, f32x16 b) {
  return each(a, b, [](v4f x, v4f y) { return x < y ? x : y; });
}
TINYLM_INLINE f32x16 sqrt(f32x16 a) {
  return each(a, a, [](v4f x, v4f) {
    return v4f{std::sqrt(x[0]), std::sqrt(x[1]), std::sqrt(x[2]), std::sqrt(x[3])};
  });
}
TINYLM_INLINE f32x16 abs(f32x16 a) {
  return each(a, a, [](v4f x, v4f) {
    return v4f{std::fabs(x[0]), std::fabs(x[1]), std::fabs(x[2]), std::fabs(x[3])};
  });
}
TINYLM_INLINE f32x16 select_lt(f32x16 a, f32x16 b, f32x16 x, f32x16 y) {
  for (int i = 0; i < 4; ++i) y.q[i] = a.q[i] < b.q[i] ? x.q[i] : y.q[i];
  return y;
}

TINYLM_INLINE float hsum(f32x16 x) {
  const v4f b = (x.q[0] + x.q[2]) + (x.q[1] + x.q[3]);
  return (b[0] + b[2]) + (b[1] + b[3]);
}
// out[o] = hsum(a[o]) for o < N.
template <int N>
TINYLM_INLINE void hsums(float* out, const f32x16* a) {
  for (int o = 0; o < N; ++o) out[o] = hsum(a[o]);
}
TINYLM_INLINE float hmax(f32x16 x) {
  const auto m = [](auto a, auto b) { return a > b ? a : b; };
  const v4f b = m(m(x.q[0], x.q[2]), m(x.q[1], x.q[3]));
  return m(m(b[0], b[2]), m(b[1], b[3]));
}

TINYLM_INLINE f32x16 scale_pow2(f32x16 p, f32x16 n) {
  float f[16], g[16];
  store(f, p);
  store(g, n);
  for (int i = 0; i < 16; ++i) {
    const int32_t ni = static_cast<int32_t>(g[i]), h = ni >> 1;
    f[i] = f[i] * bits_float(static_cast<uint32_t>(h + 127) << 23) *
           bits_float(static_cast<uint32_t>(ni - h + 127) << 23);
  }
  return load(f);
}

TINYLM_INLINE f64x8 splat(double x) {
  const v2d s = {x, x};
  return {{s, s, s, s}};
}
TINYLM_INLINE f64x8 load(const double* p) {
  f64x8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
TINYLM_INLINE void store(double* p, f64x8 x) { std::memcpy(p, &x, sizeof x); }
TINYLM_INLINE f64x8 load_n(const double* p, int64_t n) {
  double d[8] = {};
  std::memcpy(d, p, static_cast<size_t>(n) * sizeof(double));
  return load(d);
}
TINYLM_INLINE void store_n(double* p, f64x8 x, int64_t n) {
  std::memcpy(p, &x, static_cast<size_t>(n) * sizeof(double));
}
TINYLM_INLINE f64x8 fma(f64x8 a, f64x8 b, f64x8 c) {
  return each(a, b, [&c, i = 0](v2d x, v2d y) mutable {
    const v2d z = c.q[i++];
    return v2d{std::fma(x[0], y[0], z[0]), std::fma(x[1], y[1], z[1])};
  });
}

TINYLM_LEVEL_END
