#version 450
// First pass of scale_and_check (optim/grad_ops.h): g *= factor (unless multiply is 0), then
// whether each workgroup's results are all finite, into scratch[1 + k] (reduce_common.glsl).
#include "reduce_common.glsl"
#include "flags_common.glsl"

layout(std430, binding = 0) buffer Scratch { uint scratch[]; };
layout(std430, binding = 1) buffer G { float g[]; };

void main() {
  const uint t = gl_LocalInvocationID.x, k = gl_WorkGroupID.x;
  uint ok = 1u;
  for (uint i = k * 256u + t; i < n; i += groups * 256u) {
    float v = g[i];
    if (multiply != 0u) {
      v = v * factor;
      g[i] = v;
    }
    ok &= finite_bits(v);
  }
  const uint all_set = workgroup_all(ok);
  if (t == 0u) scratch[1u + k] = all_set;
}
