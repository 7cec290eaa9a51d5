#version 450
// y = mask ? x * scale : 0 (kernels/activation/dropout.cpp: one product, dropped elements +0),
// and the packed mask for the backward (dropout_common.glsl). y may be x.
#include "dropout_common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) writeonly buffer Mask { uint mask[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };

void main() {
  const uint words = (n + 3u) / 4u;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < words; i += stride) {
    const uint bits = mask_word(i);
    mask[i] = bits;
    for (uint k = 0u; k < 4u && 4u * i + k < n; ++k) {
      const uint e = 4u * i + k;
      y[e] = (bits & (1u << (8u * k))) != 0u ? x[e] * scale : 0.0;
    }
  }
}
