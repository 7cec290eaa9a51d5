#version 450
// f16 or bf16 -> f32 (kernels/cast/cast.h's convert), from halves packed two per word
// (cast_narrow.comp).
#include "half.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };  // f32 bits
layout(std430, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Push {
  uint n;
  uint kind;  // 0: f16, 1: bf16
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride)
    dst[i] = from_half((src[i >> 1] >> (16u * (i & 1u))) & 0xffffu, kind);
}
