#version 450
// Writes the keys and values of n rows (positions first .. first + n - 1) into a float cache
// (kernels/vulkan/attention.h): keys[(first + r) C + c] = src[r ld + off + c], values from
// src[r ld + off + C + c].
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Keys { float keys[]; };
layout(std430, binding = 1) writeonly buffer Values { float values[]; };
layout(std430, binding = 2) readonly buffer Src { float src[]; };
layout(push_constant) uniform Push {
  uint n;
  uint C;
  uint ld;
  uint off;
  uint first;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n * C; i += stride) {
    const uint r = i / C, c = i % C, at = r * ld + off + c;
    keys[first * C + i] = src[at];
    values[first * C + i] = src[at + C];
  }
}
