#pragma once
// Weight element types for inference kernels: float, or 16-bit storage (bf16 / IEEE f16)
// widened to float on load. Accumulation is always in float.
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

inline float to_float(float x) { return x; }
inline float to_float(Bf16 x) { return bf16_to_float(x.bits); }
inline float to_float(F16 x) { return f16_to_float(x.bits); }

inline void from_float(float& out, float x) { out = x; }
inline void from_float(Bf16& out, float x) { out.bits = float_to_bf16(x); }
inline void from_float(F16& out, float x) { out.bits = float_to_f16(x); }

}  // namespace tinylm::kernels
