#version 450
// dst[dst_first + i] = src[src_first + i] for i < n: 32-bit words copied as bits (a row moved
// between arrays that start at any element, where a View would need an aligned offset).
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 1) readonly buffer Src { uint src[]; };
layout(push_constant) uniform Push {
  uint n;
  uint dst_first;
  uint src_first;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) dst[dst_first + i] = src[src_first + i];
}
