#version 450
// y[r, j] += b[j] over rows (kernels/vulkan/matmul.h's add_bias); b in f32, f16 or bf16.
#include "matmul_types.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(push_constant) uniform Push {
  uint count;  // rows · n
  uint n;
  uint b_offset;
  uint b_type;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    const uint at = b_offset + i % n;
    y[i] += widen(b[word_of(at, b_type)], at, b_type);
  }
}
