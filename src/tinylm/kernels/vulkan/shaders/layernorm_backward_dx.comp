#version 450
// LayerNorm's input gradient (kernels/norm/layernorm_reference.h), one workgroup per row: with
// n = (x - mean) rstd and g = dy w,  dx += rstd (g - mean(g) - n mean(g n)).
#include "workgroup_sum.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer DX { float dx[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(std430, binding = 3) readonly buffer W { float w[]; };
layout(std430, binding = 4) readonly buffer Mean { float mean[]; };
layout(std430, binding = 5) readonly buffer Rstd { float rstd[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint C;
};

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < rows; r += gl_NumWorkGroups.x) {
    const uint base = r * C;
    const float m = mean[r], s = rstd[r];
    float sum_g = 0.0, sum_gn = 0.0;
    for (uint i = t; i < C; i += 256) {
      const float g = dy[base + i] * w[i];
      sum_g += g;
      sum_gn += g * ((x[base + i] - m) * s);
    }
    const float mg = workgroup_sum(sum_g) / float(C);
    const float mgn = workgroup_sum(sum_gn) / float(C);
    for (uint i = t; i < C; i += 256) {
      const float n = (x[base + i] - m) * s;
      dx[base + i] += s * (dy[base + i] * w[i] - mg - n * mgn);
    }
  }
}
