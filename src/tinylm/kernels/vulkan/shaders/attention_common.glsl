// What the attention shaders share: blocks of 16 query rows against tiles of 16 key positions
// (or the reverse), 256 invocations, heads up to 128 channels staged in shared memory with an
// odd row stride (so the 16 rows of a tile fall in distinct banks). Every sum runs in a fixed
// order: one chain of fused multiply-adds, or one invocation walking a row.
const uint kBlock = 16;     // query rows per block, key positions per tile
const uint kMaxHead = 128;  // channels per head (kernels/vulkan/attention.cpp checks it)
const uint kAccs = kMaxHead / kBlock;  // channels of a row one invocation sums
const uint kCells = kBlock * (kBlock + 1);

// Three staged tiles of 16 rows (q, k, v, dO: whichever the shader needs), and two 16 x 16
// blocks of scores or probabilities (row stride 17).
shared float tile_a[kBlock * (kMaxHead + 1)];
shared float tile_b[kBlock * (kMaxHead + 1)];
shared float tile_c[kBlock * (kMaxHead + 1)];
shared float cells_a[kCells];
shared float cells_b[kCells];
shared float row_a[kBlock];
shared float row_b[kBlock];

float minus_inf() { return uintBitsToFloat(0xff800000u); }

// The row stride of a staged tile: the head width made odd.
uint staged_stride(uint D) { return D | 1u; }

// Row a of tile_a . row b of tile_b (or tile_c), D channels in order.
float dot_ab(uint a, uint b, uint D, uint ld) {
  precise float s = 0.0;
  for (uint c = 0; c < D; ++c) s = fma(tile_a[a * ld + c], tile_b[b * ld + c], s);
  return s;
}
float dot_ac(uint a, uint b, uint D, uint ld) {
  precise float s = 0.0;
  for (uint c = 0; c < D; ++c) s = fma(tile_a[a * ld + c], tile_c[b * ld + c], s);
  return s;
}

// Attention-weight dropout in the backward: att holds P negated where the forward dropped it,
// keep_scale is 1 / (1 - rate), or 0 without dropout. dP through the mask; P unsigned; the
// weight P' the forward summed the values with.
float dropped_dp(float a, float dp, float keep_scale) {
  return keep_scale == 0.0 ? dp : a > 0.0 ? dp * keep_scale : 0.0;
}
float probability(float a, float keep_scale) { return keep_scale == 0.0 ? a : abs(a); }
float dropped_weight(float a, float keep_scale) {
  return keep_scale == 0.0 ? a : a > 0.0 ? a * keep_scale : 0.0;
}
