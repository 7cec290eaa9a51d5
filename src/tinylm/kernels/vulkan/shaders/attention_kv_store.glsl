// Writes rows' keys and values into a cache (kernels/vulkan/attention.h): row r's key is
// src[r ld + off .. + C), its value the C floats after it. Plain: rows at positions first,
// first + 1, ... of one sequence (element (first + r) C + c). ROWS: row r at position
// where_[2r + 1] of slot where_[2r] (element (slot capacity + position) C + c; a row naming
// no slot or a position past the capacity is skipped). KV_F16: two channels to a uint word
// (packHalf2x16), C even, so a position's row is whole words and no two invocations share one.
layout(local_size_x = 256) in;
#if KV_F16
layout(std430, binding = 0) writeonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) writeonly buffer Values { uint values[]; };
const uint kPer = 2;  // channels per word
#else
layout(std430, binding = 0) writeonly buffer Keys { float keys[]; };
layout(std430, binding = 1) writeonly buffer Values { float values[]; };
const uint kPer = 1;
#endif
layout(std430, binding = 2) readonly buffer Src { float src[]; };
#if ROWS
layout(std430, binding = 3) readonly buffer Where { int where_[]; };
#endif
layout(push_constant) uniform Push {
  uint n;
  uint C;
  uint ld;
  uint off;
  uint first;
  uint slots;
  uint capacity;
};

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x, words = C / kPer;
  for (uint i = gl_GlobalInvocationID.x; i < n * words; i += stride) {
    const uint r = i / words, c = i % words * kPer, at = r * ld + off + c;
#if ROWS
    const int slot = where_[2 * r], position = where_[2 * r + 1];
    if (slot < 0 || uint(slot) >= slots || position < 0 || uint(position) >= capacity) continue;
    const uint dst = ((uint(slot) * capacity + uint(position)) * C + c) / kPer;
#else
    const uint dst = ((first + r) * C + c) / kPer;
#endif
#if KV_F16
    keys[dst] = packHalf2x16(vec2(src[at], src[at + 1]));
    values[dst] = packHalf2x16(vec2(src[at + C], src[at + C + 1]));
#else
    keys[dst] = src[at];
    values[dst] = src[at + C];
#endif
  }
}
