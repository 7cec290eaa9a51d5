#version 450
// y = gelu(x), the tanh approximation (kernels/activation/gelu.h), written as x * sigmoid(2u):
// ½ (1 + tanh u) = 1 / (1 + exp(-2u)) keeps its relative accuracy where 1 + tanh u would
// cancel (x well below 0), and exp's overflow gives 0, not infinity over infinity.
#include "gelu_common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v / (1.0 + exp(-2.0 * gelu_u(v)));
  }
}
