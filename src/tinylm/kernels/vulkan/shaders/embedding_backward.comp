#version 450
// Token (and position) embedding's backward (kernels/embedding/embedding.h): dtable[tokens[r]]
// += dx[r], dpositions[r % period] += dx[r]. One invocation per column walks the rows in order,
// as the CPU kernel's threads do, so a repeated token's rows are added in the same order (no
// atomics) and the bits are the CPU's.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer DTable { float dtable[]; };
layout(std430, binding = 1) buffer DPositions { float dpositions[]; };
layout(std430, binding = 2) readonly buffer DX { float dx[]; };
layout(std430, binding = 3) readonly buffer Tokens { int tokens[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint C;
  uint period;         // at most rows
  uint has_positions;  // 0: binding 1 is a placeholder, not touched
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < C; i += stride) {
    for (uint r = 0; r < rows; ++r) {
      const float g = dx[r * C + i];
      dtable[uint(tokens[r]) * C + i] += g;
      if (has_positions != 0) dpositions[(r % period) * C + i] += g;
    }
  }
}
