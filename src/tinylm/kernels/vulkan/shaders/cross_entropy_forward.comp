#version 450
// Softmax cross-entropy's forward (kernels/loss/cross_entropy.h), one workgroup per row of
// logits: the max, then the sum of exp(l - max), each a fixed-order workgroup reduction;
// lse = max + log(sum), loss = lse - l[target].
#include "workgroup_max.glsl"
#include "workgroup_sum.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Losses { float losses[]; };
layout(std430, binding = 1) writeonly buffer Lse { float lse[]; };
layout(std430, binding = 2) readonly buffer Logits { float logits[]; };
layout(std430, binding = 3) readonly buffer Targets { int targets[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint V;
};

void main() {
  const uint t = gl_LocalInvocationID.x;
  // The row is the workgroup's, so every invocation takes the same trips (barriers inside).
  for (uint r = gl_WorkGroupID.x; r < rows; r += gl_NumWorkGroups.x) {
    const uint base = r * V;
    float m = minus_infinity();
    for (uint i = t; i < V; i += 256) {
      const float x = logits[base + i];
      if (x > m) m = x;
    }
    const float mx = workgroup_max(m);
    float sum = 0.0;
    for (uint i = t; i < V; i += 256) sum += exp(logits[base + i] - mx);
    const float row_lse = mx + log(workgroup_sum(sum));
    if (t == 0) {
      lse[r] = row_lse;
      losses[r] = row_lse - logits[base + uint(targets[r])];
    }
  }
}
