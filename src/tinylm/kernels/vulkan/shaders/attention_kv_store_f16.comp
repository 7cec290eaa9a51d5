#version 450
// attention_kv_store into an f16 cache: two channels to a uint word (packHalf2x16: round to
// nearest even), C even so a position's row is whole words and no two invocations share one.
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) writeonly buffer Values { uint values[]; };
layout(std430, binding = 2) readonly buffer Src { float src[]; };
layout(push_constant) uniform Push {
  uint n;
  uint C;
  uint ld;
  uint off;
  uint first;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x, words = C / 2;
  for (uint i = gl_GlobalInvocationID.x; i < n * words; i += stride) {
    const uint r = i / words, c = i % words * 2, at = r * ld + off + c;
    keys[first * words + i] = packHalf2x16(vec2(src[at], src[at + 1]));
    values[first * words + i] = packHalf2x16(vec2(src[at + C], src[at + C + 1]));
  }
}
