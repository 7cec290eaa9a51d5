#version 450
// dropout_mask (kernels/activation/dropout.h): the packed mask alone (dropout_common.glsl).
#include "dropout_common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Mask { uint mask[]; };

void main() {
  const uint words = (n + 3u) / 4u;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < words; i += stride) mask[i] = mask_word(i);
}
