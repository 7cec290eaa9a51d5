#include "tinylm/kernels/cast/cast.h"

#include <algorithm>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

constexpr int64_t kChunk = 1 << 14;  // elements per parallel task (a multiple of kLanes)

// body(i0, i1) over [0, n) in chunks split across threads.
template <class Fn>
void chunked(int64_t n, Fn&& body) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk),
               [&](int64_t c) { body(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

template <class From, class To>
void convert_range(const From* src, To* dst, int64_t n) {
  chunked(n, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + kLanes <= i1; i += kLanes) store(dst + i, load(src + i));
    for (; i < i1; ++i) from_float(dst[i], to_float(src[i]));
  });
}

template <class Half>
void round_range(float* dst, const float* src, int64_t n) {
  chunked(n, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    Half h[kLanes];
    for (; i + kLanes <= i1; i += kLanes) {
      store(h, load(src + i));
      store(dst + i, load(h));
    }
    for (; i < i1; ++i) {
      from_float(h[0], src[i]);
      dst[i] = to_float(h[0]);
    }
  });
}

}  // namespace

void convert(const float* src, Bf16* dst, int64_t n) { convert_range(src, dst, n); }
void convert(const float* src, F16* dst, int64_t n) { convert_range(src, dst, n); }
void convert(const Bf16* src, float* dst, int64_t n) { convert_range(src, dst, n); }
void convert(const F16* src, float* dst, int64_t n) { convert_range(src, dst, n); }
void round_to_bf16(float* dst, const float* src, int64_t n) { round_range<Bf16>(dst, src, n); }
void round_to_f16(float* dst, const float* src, int64_t n) { round_range<F16>(dst, src, n); }

void accumulate_and_clear(float* acc, float* src, int64_t n, bool round_f16) {
  int64_t i = 0;
  F16 h[kLanes];
  for (; i + kLanes <= n; i += kLanes) {
    f32x16 g = load(src + i);
    if (round_f16) {
      store(h, g);
      g = load(h);
    }
    store(acc + i, load(acc + i) + g);
    store(src + i, f32x16{});
  }
  for (; i < n; ++i) {
    from_float(h[0], src[i]);
    acc[i] += round_f16 ? to_float(h[0]) : src[i];
    src[i] = 0.0f;
  }
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_CAST_ENTRIES(X)                                                                 \
  X(void convert(const float* src, Bf16* dst, int64_t n), convert, (src, dst, n))              \
  X(void convert(const float* src, F16* dst, int64_t n), convert, (src, dst, n))               \
  X(void convert(const Bf16* src, float* dst, int64_t n), convert, (src, dst, n))              \
  X(void convert(const F16* src, float* dst, int64_t n), convert, (src, dst, n))               \
  X(void round_to_bf16(float* dst, const float* src, int64_t n), round_to_bf16, (dst, src, n)) \
  X(void round_to_f16(float* dst, const float* src, int64_t n), round_to_f16, (dst, src, n))   \
  X(void accumulate_and_clear(float* acc, float* src, int64_t n, bool round_f16),              \
    accumulate_and_clear, (acc, src, n, round_f16))
TINYLM_PUBLIC_ENTRIES(TINYLM_CAST_ENTRIES)

}  // namespace tinylm::kernels
#endif
