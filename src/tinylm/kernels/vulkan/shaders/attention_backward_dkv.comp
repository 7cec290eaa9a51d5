#version 450
// Causal attention's backward, columns (kernels/vulkan/attention.h): one workgroup per
// (sequence, head, tile of 16 key positions) walks the query blocks from its own to the end,
// so each key's dk = sum_{t >= j} dS_tj q_t and dv = sum_{t >= j} p_tj dO_t is one chain over
// t in order (no float atomics). dS is made again from dP = dO . v_j and the rows' dots that
// attention_backward_dq saved. With dropout, dv sums the weights after dropout.
#include "attention_common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer DQKV { float dqkv[]; };
layout(std430, binding = 1) readonly buffer Dots { float dots[]; };
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
  const uint hi = tid / kBlock, lo = tid % kBlock;  // (query, key) in scores, (key, lane) in sums
  const uint ld = staged_stride(D), C3 = 3 * C;
  const uint blocks = (T + kBlock - 1) / kBlock;
  const uint items = B * n_head * blocks;
  for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
    const uint blk = item % blocks, h = item / blocks % n_head, b = item / blocks / n_head;
    const uint k0 = blk * kBlock, nk = min(kBlock, T - k0);
    const uint base = b * T * C3 + h * D;
    const uint head_att = (b * n_head + h) * T;  // att row t at (head_att + t) * T
    barrier();
    for (uint e = tid; e < kBlock * D; e += 256) {  // tile_c: the tile's values
      const uint r = e / D, c = e % D;
      tile_c[r * ld + c] = r < nk ? qkv[base + (k0 + r) * C3 + 2 * C + c] : 0.0;
    }
    float dk[kAccs], dv[kAccs];
    for (uint i = 0; i < kAccs; ++i) dk[i] = dv[i] = 0.0;
    for (uint q0 = k0; q0 < T; q0 += kBlock) {
      const uint nq = min(kBlock, T - q0);
      barrier();
      for (uint e = tid; e < kBlock * D; e += 256) {  // tile_a: dO rows, tile_b: q rows
        const uint r = e / D, c = e % D;
        const bool in_block = r < nq;
        tile_a[r * ld + c] = in_block ? dout[(b * T + q0 + r) * C + h * D + c] : 0.0;
        tile_b[r * ld + c] = in_block ? qkv[base + (q0 + r) * C3 + c] : 0.0;
      }
      if (tid < nq) row_a[tid] = dots[head_att + q0 + tid];
      barrier();
      {
        const uint t = q0 + hi, j = k0 + lo;
        float p = 0.0, ds = 0.0;
        if (hi < nq && lo < nk && j <= t) {
          const float a = att[(head_att + t) * T + j];
          precise float g = dropped_dp(a, dot_ac(hi, lo, D, ld), keep_scale) - row_a[hi];
          ds = probability(a, keep_scale) * g * scale;
          p = dropped_weight(a, keep_scale);  // the weight P' of v_j
        }
        cells_a[hi * (kBlock + 1) + lo] = ds;
        cells_b[hi * (kBlock + 1) + lo] = p;
      }
      barrier();
      if (hi < nk) {
        for (uint i = 0; i < kAccs; ++i) {
          const uint d = lo + kBlock * i;
          if (d >= D) break;
          precise float a = dk[i], w = dv[i];
          for (uint r = 0; r < nq; ++r) {
            a = fma(cells_a[r * (kBlock + 1) + hi], tile_b[r * ld + d], a);
            w = fma(cells_b[r * (kBlock + 1) + hi], tile_a[r * ld + d], w);
          }
          dk[i] = a;
          dv[i] = w;
        }
      }
    }
    if (hi < nk) {
      for (uint i = 0; i < kAccs; ++i) {
        const uint d = lo + kBlock * i;
        if (d >= D) continue;
        dqkv[base + (k0 + hi) * C3 + C + d] = dk[i];
        dqkv[base + (k0 + hi) * C3 + 2 * C + d] = dv[i];
      }
    }
  }
}
