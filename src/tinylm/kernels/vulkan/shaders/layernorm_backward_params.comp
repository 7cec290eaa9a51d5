#version 450
// LayerNorm's parameter gradients, one invocation per column summing the rows in order (no
// float atomics): dw += Σ dy n, db += Σ dy, n = (x - mean) rstd.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer DW { float dw[]; };
layout(std430, binding = 1) buffer DB { float db[]; };
layout(std430, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, binding = 3) readonly buffer X { float x[]; };
layout(std430, binding = 4) readonly buffer Mean { float mean[]; };
layout(std430, binding = 5) readonly buffer Rstd { float rstd[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint C;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < C; i += stride) {
    float sum_w = 0.0, sum_b = 0.0;
    for (uint r = 0; r < rows; ++r) {
      const float d = dy[r * C + i];
      sum_w += d * ((x[r * C + i] - mean[r]) * rstd[r]);
      sum_b += d;
    }
    dw[i] += sum_w;
    db[i] += sum_b;
  }
}
