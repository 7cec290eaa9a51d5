#pragma once
// The 16-bit element types of weights and activations: bf16 and IEEE f16, widened to float
// for arithmetic (accumulation is always float). The scalar conversions here are portable and
// round to nearest even as core/dtype.h does; kernels/cpu/vec.h converts 16 at a time with the
// same results.
#include <cstdint>

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
