#pragma once
// Internal helpers of the training kernels, on kernels/vec.h's 16-lane float vectors: the
// one vectorized exp (and tanh) of the project, and dot/axpy over short rows. Float gets the
// vector code; double (the finite-difference reference) gets plain loops and the C library.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tinylm/kernels/vec.h"

namespace tinylm::kernels::simd {

using f32x16 = vec::Vec<float>;
using i32x16 = int32_t __attribute__((vector_size(64)));

// Loads, stores, broadcasts and lane sums are kernels/vec.h's (one fixed lane-sum order).
using vec::hsum;
using vec::load;
using vec::splat;
using vec::store;
inline float hmax(f32x16 v) {
  float m = v[0];
  for (int i = 1; i < 16; ++i) m = v[i] > m ? v[i] : m;
  return m;
}
inline f32x16 vmax(f32x16 a, f32x16 b) { return a > b ? a : b; }
inline f32x16 vmin(f32x16 a, f32x16 b) { return a < b ? a : b; }

// exp(x) for float lanes: x = n ln2 + r with |r| <= ln2/2, Cephes' degree-5 polynomial for
// e^r (about 1 ulp), 2^n built in the exponent field. Inputs are clamped to [-87.3, 88.7], so
// the result is finite and at least ~1e-38 (callers subtract a row maximum, or feed tanh).
inline f32x16 exp(f32x16 x) {
  x = vmin(vmax(x, splat(-87.3f)), splat(88.7f));
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
  // 2^n as a float: n + 127 in the exponent field. n is in [-126, 128]; split the scale in
  // two factors so n = 128 (x near 88.7) does not overflow the field.
  const i32x16 ni = __builtin_convertvector(n, i32x16);
  const i32x16 half = ni >> 1;
  const i32x16 e1 = (half + 127) << 23, e2 = (ni - half + 127) << 23;
  f32x16 s1, s2;
  std::memcpy(&s1, &e1, sizeof s1);
  std::memcpy(&s2, &e2, sizeof s2);
  return p * s1 * s2;
}

// tanh(u) = 1 - 2 / (e^{2u} + 1): absolute error ~1 ulp of 1, which is what GELU needs
// (it uses 1 + tanh); saturates to exactly +-1 for large |u|.
inline f32x16 tanh(f32x16 u) { return 1.0f - 2.0f / (exp(u + u) + 1.0f); }

// exp over a row in place, vector body plus a scalar tail through the same vector code.
inline void exp_inplace(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store(x + i, exp(load(x + i)));
  if (i < n) {
    float buf[16] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    store(buf, exp(load(buf)));
    std::memcpy(x + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

// The grain for parallel_for over items of `work` elementary operations each: a range only
// forks when it holds about a million operations (a few hundred microseconds) or more. A
// fork/join costs microseconds on an idle machine but a scheduler time slice (~20 ms
// measured) when the cores are oversubscribed, so the small per-row passes of a GPT-2 step
// (LayerNorm, bias, residual: tens of microseconds each) stay on the calling thread and only
// attention, GELU, cross-entropy and the large casts fork.
inline int64_t grain_for(int64_t work) { return 1 + (int64_t{1} << 20) / (work > 0 ? work : 1); }

template <class T>
inline T dot(const T* a, const T* b, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    f32x16 acc{};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) acc += load(a + i) * load(b + i);
    float s = hsum(acc);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
  } else {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
  }
}

// y += alpha * x
template <class T>
inline void axpy(T* y, T alpha, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

template <class T>
inline T tanh_scalar(T u) {
  if constexpr (std::is_same_v<T, float>) {
    return tanh(splat(u))[0];
  } else {
    return std::tanh(u);
  }
}

}  // namespace tinylm::kernels::simd
