#version 450
// f32 -> f16 or bf16 (kernels/cast/cast.h's convert), halves packed two per word: element i in
// the low (i even) or high (i odd) 16 bits of word i / 2; an odd count's last high half is 0.
#include "half.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 1) readonly buffer Src { uint src[]; };  // f32 bits
layout(push_constant) uniform Push {
  uint n;
  uint kind;  // 0: f16, 1: bf16
};

void main() {
  const uint words = (n + 1u) / 2u;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < words; i += stride) {
    const uint lo = to_half(src[2u * i], kind);
    const uint hi = 2u * i + 1u < n ? to_half(src[2u * i + 1u], kind) : 0u;
    dst[i] = lo | (hi << 16);
  }
}
