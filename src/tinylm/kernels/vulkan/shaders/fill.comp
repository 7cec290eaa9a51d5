#version 450
// y = value over n elements (a gradient zeroed before its kernels accumulate into it). The
// value travels as its bits, so -0 and NaN payloads arrive as they were.
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform Push {
  uint n;
  uint bits;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) y[i] = bits;
}
