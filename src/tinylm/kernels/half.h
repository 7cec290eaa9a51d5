#pragma once
// Weight element types for inference kernels: float, or 16-bit storage (bf16 / IEEE f16)
// widened to float on load. Accumulation is always in float.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tinylm/core/dtype.h"

namespace tinylm::kernels {

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

// F16C, where the CPU has it, converts in hardware with the same rounding (round to nearest
// even) as the portable functions in core/dtype.h; tests hold the two equal.
inline float to_float(float x) { return x; }
inline float to_float(Bf16 x) { return bf16_to_float(x.bits); }
inline float to_float(F16 x) {
#if defined(__F16C__)
  return _cvtsh_ss(x.bits);
#else
  return f16_to_float(x.bits);
#endif
}

inline void from_float(float& out, float x) { out = x; }
inline void from_float(Bf16& out, float x) { out.bits = float_to_bf16(x); }
inline void from_float(F16& out, float x) {
#if defined(__F16C__)
  // Not _cvtss_sh: clang's macro for it is a C99 compound literal (-Wpedantic).
  out.bits = static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
#else
  out.bits = float_to_f16(x);
#endif
}

}  // namespace tinylm::kernels
