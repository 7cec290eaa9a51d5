#version 450
// Zeroes n 32-bit words (kernels/vulkan/ops.h fill_zero).
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * 256) y[i] = 0;
}
