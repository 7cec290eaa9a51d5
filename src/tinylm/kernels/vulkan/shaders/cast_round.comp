#version 450
// dst = float(half(src)) (kernels/cast/cast.h's round_to_f16 / round_to_bf16): the rounded
// values kept as f32. dst may be src.
#include "half.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Dst { uint dst[]; };
layout(std430, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Push {
  uint n;
  uint kind;  // 0: f16, 1: bf16
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride)
    dst[i] = from_half(to_half(src[i], kind), kind);
}
