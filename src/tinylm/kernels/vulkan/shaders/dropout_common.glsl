// Dropout's masks (kernels/activation/dropout.h): element e (global index g = first + e) is
// kept unless (w >> 8) < threshold, w word (g mod 4) of Philox4x32-10(counter = {g / 4, site,
// step low, step high}, key = seed). Masks are packed four per uint word, element e in byte
// (e mod 4) of word e / 4 (little-endian: the CPU's uint8 array, byte for byte); a last
// word's bytes past n are 0. One invocation per word: its four elements need one Philox block,
// or two when first is not a multiple of 4.
#include "philox.glsl"

layout(push_constant) uniform Push {
  uint n;
  uint first_quad;  // first / 4
  uint first_rem;   // first mod 4
  uint site;
  uint step_lo, step_hi;
  uint seed_lo, seed_hi;
  uint threshold;   // ceil(rate 2^24)
  float scale;      // 1 / (1 - rate), computed in float as the CPU does
};

// The mask word of elements 4 word .. 4 word + 3.
uint mask_word(uint word) {
  const uint e0 = 4u * word;
  const uint q0 = (first_rem + e0) >> 2;  // first Philox block, relative to first_quad
  const uvec2 key = uvec2(seed_lo, seed_hi);
  const uvec4 a = philox4x32_10(uvec4(first_quad + q0, site, step_lo, step_hi), key);
  uvec4 b = uvec4(0u);
  if (first_rem != 0u) b = philox4x32_10(uvec4(first_quad + q0 + 1u, site, step_lo, step_hi), key);
  uint bits = 0u;
  for (uint k = 0u; k < 4u && e0 + k < n; ++k) {
    const uint r = first_rem + e0 + k;
    const uvec4 block = (r >> 2) == q0 ? a : b;
    const uint w = block[r & 3u];
    if ((w >> 8) >= threshold) bits |= 1u << (8u * k);
  }
  return bits;
}
