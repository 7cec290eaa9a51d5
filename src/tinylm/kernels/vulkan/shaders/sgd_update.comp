#version 450
// SGD (optim/grad_ops.h's sgd_update): p -= lr g with lr a float, one product and one
// difference, each rounded (`precise`: no fused multiply-add), as the CPU's float loop.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer P { float p[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(push_constant) uniform Push {
  uint n;
  float lr;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    precise const float step = lr * g[i];
    p[i] = p[i] - step;
  }
}
