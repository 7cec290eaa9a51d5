#version 450
// Second pass of the finite check (reduce_common.glsl): scratch[0] = AND of scratch[1 ..= groups].
#include "reduce_common.glsl"
#include "flags_common.glsl"

layout(std430, binding = 0) buffer Scratch { uint scratch[]; };

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint all_set = workgroup_all(t < groups ? scratch[1u + t] : 1u);
  if (t == 0u) scratch[0] = all_set;
}
