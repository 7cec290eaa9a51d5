#pragma once
// Folding one sequence's gradient into an accumulation window: acc += src, then src = 0 so
// the buffer is ready for the next sequence, in one pass. With round_f16 each src value is
// first rounded to IEEE half precision (round to nearest even; beyond ±65504 it becomes
// ±inf), as a mixed-precision backward that stores its gradients in fp16 would; the loss
// scaler then sees the overflow as a non-finite value.
#include <cstdint>

namespace tinylm::kernels {

void accumulate_and_clear(float* acc, float* src, int64_t n, bool round_f16);

// x rounded to the nearest f16 value, as a float (core/dtype.h's float_to_f16 then f16_to_float).
float round_to_f16(float x);

}  // namespace tinylm::kernels
