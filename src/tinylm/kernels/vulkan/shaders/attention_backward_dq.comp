#version 450
// Causal attention's backward, rows (kernels/vulkan/attention.h): one workgroup per (sequence,
// head, block of 16 query rows). Two passes over the key tiles: the first sums each row's
// dot = sum_j p_j dP_j (dP_j = dO . v_j: per-invocation sums over the tiles, then the 16 in
// order) and saves it for the columns' dispatch; the second makes dS_j = p_j (dP_j - dot) scale
// and dq = sum_j dS_j k_j (one chain per channel, positions in order). With dropout, dP_j goes
// through the forward's mask and scale (dropped_dp).
#include "attention_common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer DQKV { float dqkv[]; };
layout(std430, binding = 1) writeonly buffer Dots { float dots[]; };
layout(std430, binding = 2) readonly buffer DOut { float dout[]; };
layout(std430, binding = 3) readonly buffer Att { float att[]; };
layout(std430, binding = 4) readonly buffer QKV { float qkv[]; };
layout(push_constant) uniform Push {
  uint B;
  uint n_head;
  uint D;
  uint T;
  uint C;
  float scale;
  float keep_scale;  // dropout: 0 for none; else att holds P signed by the forward's mask
};

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint qi = tid / kBlock, kj = tid % kBlock;
  const uint ld = staged_stride(D), C3 = 3 * C;
  const uint blocks = (T + kBlock - 1) / kBlock;
  const uint items = B * n_head * blocks;
  for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
    const uint blk = item % blocks, h = item / blocks % n_head, b = item / blocks / n_head;
    const uint r0 = blk * kBlock, nq = min(kBlock, T - r0);
    const uint base = b * T * C3 + h * D;  // q of position 0; k at + C, v at + 2C
    const bool live = qi < nq;
    const uint t = r0 + qi, last = r0 + nq - 1;
    const uint att_row = ((b * n_head + h) * T + t) * T;
    barrier();
    for (uint e = tid; e < kBlock * D; e += 256) {
      const uint r = e / D, c = e % D;
      tile_a[r * ld + c] = r < nq ? dout[(b * T + r0 + r) * C + h * D + c] : 0.0;
    }
    // Pass 1: the rows' dots.
    precise float part = 0.0;
    for (uint k0 = 0; k0 <= last; k0 += kBlock) {
      const uint nk = min(kBlock, last + 1 - k0);
      barrier();
      for (uint e = tid; e < kBlock * D; e += 256) {
        const uint r = e / D, c = e % D;
        tile_c[r * ld + c] = r < nk ? qkv[base + (k0 + r) * C3 + 2 * C + c] : 0.0;
      }
      barrier();
      if (live && k0 + kj <= t) {
        const float a = att[att_row + k0 + kj];
        const float dp = dropped_dp(a, dot_ac(qi, kj, D, ld), keep_scale);
        part = fma(probability(a, keep_scale), dp, part);
      }
    }
    cells_a[qi * (kBlock + 1) + kj] = part;
    barrier();
    if (kj == 0) {
      precise float dot = 0.0;
      for (uint j = 0; j < kBlock; ++j) dot += cells_a[qi * (kBlock + 1) + j];
      row_a[qi] = dot;
      if (live) dots[(b * n_head + h) * T + t] = dot;
    }
    barrier();
    const float dot = row_a[qi];
    // Pass 2: dS and dq.
    float acc[kAccs];
    for (uint i = 0; i < kAccs; ++i) acc[i] = 0.0;
    for (uint k0 = 0; k0 <= last; k0 += kBlock) {
      const uint nk = min(kBlock, last + 1 - k0);
      barrier();
      for (uint e = tid; e < kBlock * D; e += 256) {
        const uint r = e / D, c = e % D;
        const bool in_tile = r < nk;
        tile_b[r * ld + c] = in_tile ? qkv[base + (k0 + r) * C3 + C + c] : 0.0;
        tile_c[r * ld + c] = in_tile ? qkv[base + (k0 + r) * C3 + 2 * C + c] : 0.0;
      }
      barrier();
      float ds = 0.0;
      if (live && k0 + kj <= t) {
        const float a = att[att_row + k0 + kj];
        precise float g = dropped_dp(a, dot_ac(qi, kj, D, ld), keep_scale) - dot;
        ds = probability(a, keep_scale) * g * scale;
      }
      cells_a[qi * (kBlock + 1) + kj] = ds;
      barrier();
      if (live && k0 <= t) {
        const uint n = min(nk, t + 1 - k0);
        for (uint i = 0; i < kAccs; ++i) {
          const uint d = kj + kBlock * i;
          if (d >= D) break;
          precise float a = acc[i];
          for (uint j = 0; j < n; ++j)
            a = fma(cells_a[qi * (kBlock + 1) + j], tile_b[j * ld + d], a);
          acc[i] = a;
        }
      }
    }
    if (live) {
      for (uint i = 0; i < kAccs; ++i) {
        const uint d = kj + kBlock * i;
        if (d < D) dqkv[(b * T + t) * C3 + h * D + d] = acc[i];
      }
    }
  }
}
