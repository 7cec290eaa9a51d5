#version 450
// Softmax cross-entropy's backward (kernels/loss/cross_entropy.h): dlogits = scale *
// (exp(l - lse) - onehot(target)), written; the target's entry is (p scale) - scale, rounded as
// the CPU kernel's. Each element reads only its own logit, so dlogits may be the logits.
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer DLogits { float dlogits[]; };
layout(std430, binding = 1) readonly buffer Logits { float logits[]; };
layout(std430, binding = 2) readonly buffer Lse { float lse[]; };
layout(std430, binding = 3) readonly buffer Targets { int targets[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint V;
  float scale;
};

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < rows; r += gl_NumWorkGroups.x) {
    const uint base = r * V, target = uint(targets[r]);
    const float row_lse = lse[r];
    for (uint i = t; i < V; i += 256) {
      float g = exp(logits[base + i] - row_lse) * scale;
      if (i == target) g -= scale;
      dlogits[base + i] = g;
    }
  }
}
