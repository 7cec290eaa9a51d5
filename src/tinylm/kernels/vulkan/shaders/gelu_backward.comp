#version 450
// dx = dy * gelu'(x) (kernels/activation/gelu.h). With s = sigmoid(2u) = ½ (1 + tanh u) and
// 1 - s = sigmoid(-2u), each from its own exp (no cancellation, no infinity over infinity):
//   gelu'(x) = s + 2 x s (1 - s) √(2/π) (1 + 3·0.044715 x²).
#include "gelu_common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer DX { float dx[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(push_constant) uniform Push { uint n; };

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    const float v = x[i];
    const float u2 = 2.0 * gelu_u(v);
    const float s = 1.0 / (1.0 + exp(-u2));
    const float s_minus = 1.0 / (1.0 + exp(u2));
    const float d = s + 2.0 * v * s * s_minus * kSqrt2OverPi * (1.0 + 3.0 * kCubic * v * v);
    dx[i] = dy[i] * d;
  }
}
