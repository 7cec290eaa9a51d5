// Philox4x32-10 (core/philox.h): a pure function of (counter, key), in 32-bit integers only
// (umulExtended gives the high and low words of each 32 x 32 product), so every device draws
// the CPU's bits.
uvec4 philox4x32_10(uvec4 ctr, uvec2 key) {
  const uint kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(ctr.x, kM0, hi0, lo0);
    umulExtended(ctr.z, kM1, hi1, lo1);
    ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key += uvec2(kW0, kW1);
  }
  return ctr;
}

// Whether dropout keeps element e of a tensor whose element 0 is global element
// 4 first_quad + first_rem (kernels/activation/dropout.h): word (g mod 4) of the block of g / 4,
// g = first + e, at least threshold once shifted right by 8.
bool dropout_keeps(uint e, uint first_quad, uint first_rem, uint site, uvec2 step, uvec2 seed,
                   uint threshold) {
  const uint r = first_rem + e;
  const uvec4 block = philox4x32_10(uvec4(first_quad + (r >> 2), site, step.x, step.y), seed);
  return (block[r & 3u] >> 8) >= threshold;
}
