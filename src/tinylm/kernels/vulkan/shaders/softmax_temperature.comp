#version 450
// The sampler's weights (generate/sampler.h) as probabilities, one workgroup per row:
// p = exp((l - max) / temperature) / sum, the max and the sum each a fixed-order workgroup
// reduction; (l - max) / temperature in the sampler's order. NaN logits weigh 0 (the sampler
// never draws them) and are left out of the max.
#include "workgroup_max.glsl"
#include "workgroup_sum.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Probs { float probs[]; };
layout(std430, binding = 1) readonly buffer Logits { float logits[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint V;
  float temperature;
};

bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }

float weight(float x, float mx) { return is_nan(x) ? 0.0 : exp((x - mx) / temperature); }

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < rows; r += gl_NumWorkGroups.x) {
    const uint base = r * V;
    float m = minus_infinity();
    for (uint i = t; i < V; i += 256) {
      const float x = logits[base + i];
      if (!is_nan(x) && x > m) m = x;
    }
    const float mx = workgroup_max(m);
    float sum = 0.0;
    for (uint i = t; i < V; i += 256) sum += weight(logits[base + i], mx);
    const float total = workgroup_sum(sum);
    for (uint i = t; i < V; i += 256) probs[base + i] = weight(logits[base + i], mx) / total;
  }
}
