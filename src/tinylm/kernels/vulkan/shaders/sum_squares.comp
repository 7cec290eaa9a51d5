#version 450
// First pass of Σ x² (reduce_common.glsl): each workgroup's partial sum, in f32.
#include "reduce_common.glsl"
#include "workgroup_sum.glsl"

layout(std430, binding = 0) buffer Scratch { float scratch[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };

void main() {
  const uint t = gl_LocalInvocationID.x, k = gl_WorkGroupID.x;
  float s = 0.0;
  for (uint i = k * 256u + t; i < n; i += groups * 256u) {
    precise const float sq = x[i] * x[i];
    s += sq;
  }
  const float total = workgroup_sum(s);
  if (t == 0u) scratch[1u + k] = total;
}
