#include "tinylm/kernels/grad_accumulate.h"

#include "tinylm/core/dtype.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tinylm::kernels {

float round_to_f16(float x) { return f16_to_float(float_to_f16(x)); }

void accumulate_and_clear(float* acc, float* src, int64_t n, bool round_f16) {
  int64_t i = 0;
  if (round_f16) {
#if defined(__AVX512F__)
    // (The maskz forms sidestep a GCC 12 maybe-uninitialized warning in the plain ones.)
    // vcvtps2ph rounds to nearest even like float_to_f16 (tests hold the two equal).
    for (; i + 16 <= n; i += 16) {
      const __m256i h =
          _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_maskz_cvtph_ps(0xffff, h)));
      _mm512_storeu_ps(src + i, _mm512_setzero_ps());
    }
#endif
    for (; i < n; ++i) {
      acc[i] += round_to_f16(src[i]);
      src[i] = 0.0f;
    }
    return;
  }
  for (; i < n; ++i) {
    acc[i] += src[i];
    src[i] = 0.0f;
  }
}

}  // namespace tinylm::kernels
