#version 450
// Adam / AdamW (kernels/optim/adam.h), each element alone, in f32 as the CPU's:
//   g' = grad_scale g;  p' = p - decay p;  m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'²
//   p = p' - lr (m / c1) / (sqrt(v / c2) + eps);  g = 0.
// The scalars are the CPU's (AdamStepF32, rounded from double on the host). `precise` keeps
// each product and sum rounded on its own (no fused multiply-add), so a device gives the same
// bits each run and the error bound stays the one stated in the header.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer P { float p[]; };
layout(std430, binding = 1) buffer G { float g[]; };
layout(std430, binding = 2) buffer M { float m[]; };
layout(std430, binding = 3) buffer V { float v[]; };
layout(push_constant) uniform Push {
  uint n;
  float lr, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, c1, c2, decay, grad_scale;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    precise const float gi = g[i] * grad_scale;
    precise float pi = p[i];
    if (decay != 0.0) pi = pi - decay * pi;
    precise const float mi = beta1 * m[i] + one_minus_beta1 * gi;
    precise const float vi = beta2 * v[i] + one_minus_beta2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    precise const float update = lr * (mi / c1) / (sqrt(vi / c2) + eps);
    p[i] = pi - update;
    g[i] = 0.0;
  }
}
