#version 450
// The embedding of rows at positions of their own (a continuous batch's rows, each from its
// sequence): x[r][i] = table[tokens[r]][i] + positions[where[2r + 1]][i], where holding
// (slot, position) pairs as the attention's rows ops read them. One addition per element, as
// embedding_forward.comp's; the table is f32, or f16 or bf16 two per uint word.
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Tokens { int tokens[]; };
layout(std430, binding = 2) readonly buffer Table { uint table[]; };
layout(std430, binding = 3) readonly buffer Positions { float positions[]; };
layout(std430, binding = 4) readonly buffer Where { int where_[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint C;
  uint table_type;  // 0: f32, 1: f16, 2: bf16
  uint vocab;
  uint transposed;  // 1: the table is stored (C, vocab), column `token` holding its vector
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
    x[k] = e + positions[uint(where_[2 * r + 1]) * C + i];
  }
}
