#version 450
// Token (and position) embedding's forward (kernels/embedding/embedding.h): x[r][i] =
// table[tokens[r]][i] + positions[first + r % period][i], one invocation per element: one
// addition (none without positions), so the CPU kernel's bits. The table is f32, or f16 or
// bf16 two per uint word (the element at an even index in the low half), widened exactly.
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) readonly buffer Table { uint table[]; };  // f32 bits or 16-bit pairs
layout(std430, binding = 3) readonly buffer Positions { float positions[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint C;
  uint first;
  uint period;         // at most rows (r % period is the same)
  uint has_positions;  // 0: binding 3 is a placeholder, not read
  uint table_type;     // 0: f32, 1: f16, 2: bf16
  uint vocab;
  uint transposed;     // 1: the table is stored (C, vocab), column `token` holding its vector
};

float table_value(uint e) {
  if (table_type == 0) return uintBitsToFloat(table[e]);
  const uint word = table[e >> 1], half_bits = (e & 1) == 0 ? word & 0xffffu : word >> 16;
  if (table_type == 1) return unpackHalf2x16(half_bits).x;
  return uintBitsToFloat(half_bits << 16);
}

void main() {
  const uint n = rows * C, stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint k = gl_GlobalInvocationID.x; k < n; k += stride) {
    const uint r = k / C, i = k - r * C;
    const uint token = uint(tokens[r]);
    const float e = table_value(transposed != 0 ? i * vocab + token : token * C + i);
    x[k] = has_positions != 0 ? e + positions[(first + r % period) * C + i] : e;
  }
}
