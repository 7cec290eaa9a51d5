#include "tinylm/kernels/cast.h"

#include <immintrin.h>

#include <algorithm>

#include "tinylm/core/parallel.h"

namespace tinylm::kernels {

namespace {
constexpr int64_t kChunk = 1 << 14;  // elements per parallel task (multiple of 16)

template <class Fn>
void chunked(int64_t n, Fn&& body) {
  parallel_for(0, (n + kChunk - 1) / kChunk, simd::grain_for(kChunk), [&](int64_t c) {
    body(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
}
}  // namespace

void cast_to_bf16(Bf16* dst, const float* src, int64_t n) {
  chunked(n, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
    for (; i + 16 <= i1; i += 16) store_bf16x16(dst + i, simd::load(src + i));
    for (; i < i1; ++i) from_float(dst[i], src[i]);
  });
}

void round_to_f16(float* dst, const float* src, int64_t n) {
  chunked(n, [&](int64_t i0, int64_t i1) {
    int64_t i = i0;
#if defined(__F16C__)
    for (; i + 8 <= i1; i += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
#endif
    for (; i < i1; ++i) {
      F16 h;
      from_float(h, src[i]);
      dst[i] = to_float(h);
    }
  });
}

}  // namespace tinylm::kernels
