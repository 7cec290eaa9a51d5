#version 450
// db[j] += Σ_r dy[r, j] (kernels/vulkan/matmul.h's bias_backward): one invocation per column
// adds the rows into db[j]'s value in row order, as the CPU kernel does.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Db { float db[]; };
layout(std430, binding = 1) readonly buffer Dy { float dy[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint n;
  uint db_offset;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint j = gl_GlobalInvocationID.x; j < n; j += stride) {
    float s = db[db_offset + j];
    for (uint r = 0; r < rows; ++r) s += dy[r * n + j];
    db[db_offset + j] = s;
  }
}
