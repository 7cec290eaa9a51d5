#version 450
// Second pass of a float reduction (reduce_common.glsl): scratch[0] = Σ scratch[1 ..= groups].
#include "reduce_common.glsl"
#include "workgroup_sum.glsl"

layout(std430, binding = 0) buffer Scratch { float scratch[]; };

void main() {
  const uint t = gl_LocalInvocationID.x;
  const float total = workgroup_sum(t < groups ? scratch[1u + t] : 0.0);
  if (t == 0u) scratch[0] = total;
}
