#version 450
// acc += src, then src = 0 (kernels/cast/cast.h's accumulate_and_clear); with round_f16 each
// src value is first rounded to f16 (an overflow becomes inf for the loss scaler to see).
#include "half.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Acc { float acc[]; };
layout(std430, binding = 1) buffer Src { float src[]; };
layout(push_constant) uniform Push {
  uint n;
  uint round_f16;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    float s = src[i];
    if (round_f16 != 0u) s = uintBitsToFloat(f16_to_float(float_to_f16(floatBitsToUint(s))));
    acc[i] = acc[i] + s;
    src[i] = 0.0;
  }
}
