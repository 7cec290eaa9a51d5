#version 450
// dx = mask ? dy * scale : 0 (kernels/activation/dropout.cpp), the mask packed four per word
// (dropout_common.glsl). dx may be dy.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer DX { float dx[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) readonly buffer Mask { uint mask[]; };
layout(push_constant) uniform Push {
  uint n;
  float scale;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < n; e += stride) {
    const bool keep = ((mask[e >> 2] >> (8u * (e & 3u))) & 0xffu) != 0u;
    dx[e] = keep ? dy[e] * scale : 0.0;
  }
}
