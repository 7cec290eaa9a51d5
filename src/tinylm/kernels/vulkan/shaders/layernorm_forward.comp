#version 450
// LayerNorm (kernels/norm/layernorm.h), one workgroup per row: the mean, then the mean of the
// centred squares (two passes, as the CPU kernel), each a fixed-order workgroup sum.
#include "workgroup_sum.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Y { float y[]; };
layout(std430, binding = 1) writeonly buffer Mean { float mean[]; };
layout(std430, binding = 2) writeonly buffer Rstd { float rstd[]; };
layout(std430, binding = 3) readonly buffer X { float x[]; };
layout(std430, binding = 4) readonly buffer W { float w[]; };
layout(std430, binding = 5) readonly buffer B { float b[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint C;
  float eps;
};

void main() {
  const uint t = gl_LocalInvocationID.x;
  // The row is the workgroup's, so every invocation takes the same trips (barriers inside).
  for (uint r = gl_WorkGroupID.x; r < rows; r += gl_NumWorkGroups.x) {
    const uint base = r * C;
    float sum = 0.0;
    for (uint i = t; i < C; i += 256) sum += x[base + i];
    const float m = workgroup_sum(sum) / float(C);
    float squares = 0.0;
    for (uint i = t; i < C; i += 256) {
      const float d = x[base + i] - m;
      squares += d * d;
    }
    const float s = 1.0 / sqrt(workgroup_sum(squares) / float(C) + eps);
    for (uint i = t; i < C; i += 256) y[base + i] = (x[base + i] - m) * s * w[i] + b[i];
    if (t == 0) {
      mean[r] = m;
      rstd[r] = s;
    }
  }
}
