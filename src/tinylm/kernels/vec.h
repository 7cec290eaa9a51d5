#pragma once
// 64-byte SIMD vectors (GCC vector extensions) for the compiled kernels, templated on the
// element type: 16 floats or 8 doubles, one AVX-512 register (two or four narrower ones on
// other machines; the compiler splits them). kernels/train_simd.h adds exp and tanh for
// float. Include only from kernels/*.cpp, which are compiled with FMA contraction.
//
// Partial loads and stores (the last few elements of a row) go through a zero-filled full
// vector, so an element is computed by the same vector instructions wherever it sits: a
// row's results do not depend on how many rows or columns surround it, which keeps the
// incremental decoder and the full forward bit-identical.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tinylm::kernels::vec {

template <class T>
struct VecOf {
  typedef T type __attribute__((vector_size(64)));
};
template <class T>
using Vec = typename VecOf<T>::type;

template <class T>
inline constexpr int64_t kLanes = static_cast<int64_t>(64 / sizeof(T));

template <class T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void store(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}
// The first n (1 <= n <= lanes) elements from p, zero in the other lanes; never touches
// memory past p + n. A masked load where AVX-512 has one.
template <class T>
inline Vec<T> load_n(const T* p, int64_t n) {
  if (n == kLanes<T>) return load(p);
#if defined(__AVX512F__)
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
  if constexpr (sizeof(T) == 4) {
    return reinterpret_cast<Vec<T>>(_mm512_maskz_loadu_ps(m, p));
  } else {
    return reinterpret_cast<Vec<T>>(_mm512_maskz_loadu_pd(static_cast<__mmask8>(m), p));
  }
#else
  Vec<T> v = {};
  std::memcpy(&v, p, static_cast<size_t>(n) * sizeof(T));
  return v;
#endif
}

// Stores the first n (1 <= n <= lanes) lanes of v.
template <class T>
inline void store_n(T* p, Vec<T> v, int64_t n) {
  if (n == kLanes<T>) {
    store(p, v);
    return;
  }
#if defined(__AVX512F__)
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
  if constexpr (sizeof(T) == 4) {
    _mm512_mask_storeu_ps(p, m, reinterpret_cast<__m512>(v));
  } else {
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>(m), reinterpret_cast<__m512d>(v));
  }
#else
  std::memcpy(p, &v, static_cast<size_t>(n) * sizeof(T));
#endif
}

template <class T>
inline Vec<T> splat(T x) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4) {
    return reinterpret_cast<Vec<T>>(_mm512_set1_ps(x));
  } else {
    return reinterpret_cast<Vec<T>>(_mm512_set1_pd(x));
  }
#else
  Vec<T> v;
  for (int64_t i = 0; i < kLanes<T>; ++i) v[i] = x;
  return v;
#endif
}

// Sum of the lanes in a fixed order (pairwise halving), independent of where the vector
// came from. For 16 floats the halvings are spelled as shuffles, so they compile to four
// vector adds rather than a spill to memory and scalar adds; the order is the same.
template <class V>
inline auto hsum(V v) {
  using T = std::remove_cvref_t<decltype(v[0])>;
  if constexpr (std::is_same_v<T, float> && kLanes<T> == 16) {
    using f32x8 = float __attribute__((vector_size(32)));
    using f32x4 = float __attribute__((vector_size(16)));
    const f32x8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    const f32x4 b =
        __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (b[0] + b[2]) + (b[1] + b[3]);
  }
  T lanes[kLanes<T>];
  std::memcpy(lanes, &v, sizeof v);
  for (int64_t w = kLanes<T> / 2; w >= 1; w /= 2) {
    for (int64_t i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  }
  return lanes[0];
}

}  // namespace tinylm::kernels::vec
