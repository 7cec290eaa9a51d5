// Causal attention's forward (kernels/vulkan/attention.h), fused: one workgroup per (sequence,
// head, block of 16 query rows) makes one pass over the key/value tiles 0 .. the block's last
// position, with a running max and sum per row (online softmax): for each tile the scores
// s_j = q . k_j, m' = max(m, s_j), c = exp((m - m') scale), l = l c + sum_j exp((s_j - m')
// scale), acc = acc c + sum_j p_j v_j; out = acc / l. A row skips the tiles past its own
// position, so its bits do not depend on the rows computed with it. With write_att, the raw
// scores go to att as they are made and are turned into the probabilities
// exp((s_j - m) scale) / l at the end (each by the invocation that wrote it).
//
// Attention-weight dropout (training, drop_threshold != 0): probability j of row r is kept as
// the CPU's masks keep element ((s n_head + h) rows + r) rows + j of the site (philox.glsl), and
// the sums take the kept ones times keep_scale; att holds the probabilities negated where
// dropped.
//
// KV_F16 (defined before this file is included) reads keys and values as f16 pairs in uint
// words (a cache: kv_off and ldkv even). ROWS: each "sequence" is one row of a decode step,
// against cache slot where_[2s] up to position where_[2s + 1] (rows = 1; a row naming no slot
// or a position past the capacity is skipped).
#include "attention_common.glsl"
#include "philox.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer Out { float out_[]; };
layout(std430, binding = 1) buffer Att { float att[]; };
layout(std430, binding = 2) readonly buffer Q { float q[]; };
#if KV_F16
layout(std430, binding = 3) readonly buffer K { uint k[]; };
layout(std430, binding = 4) readonly buffer V { uint v[]; };
float key_at(uint i) { return unpackHalf2x16(k[i >> 1])[i & 1u]; }
float value_at(uint i) { return unpackHalf2x16(v[i >> 1])[i & 1u]; }
#else
layout(std430, binding = 3) readonly buffer K { float k[]; };
layout(std430, binding = 4) readonly buffer V { float v[]; };
float key_at(uint i) { return k[i]; }
float value_at(uint i) { return v[i]; }
#endif
#if ROWS
layout(std430, binding = 5) readonly buffer Where { int where_[]; };
#endif
layout(push_constant) uniform Push {
  uint sequences;  // each `rows` query rows against its own keys and values
  uint n_head;
  uint D;
  uint rows;
  uint first;  // the position of row 0 (training: 0; a cache: the first new position)
  uint ldq;    // q: row r of sequence s, channel c at s * q_seq + r * ldq + c
  uint q_seq;
  uint ldkv;  // keys: position j at s * kv_seq + k_off + j * ldkv (values at v_off)
  uint kv_seq;
  uint k_off;
  uint v_off;
  uint ldo;  // out: s * o_seq + r * ldo + c
  uint o_seq;
  uint write_att;  // att: (sequences, n_head, rows, rows), training only (first = 0)
  float scale;
  uint slots;  // ROWS: the cache's slots, each `capacity` positions kv_seq apart
  uint capacity;
  uint drop_threshold;  // dropout (training): 0 for none; else as dropout_common.glsl's push
  float keep_scale;
  uint drop_site;
  uint step_lo, step_hi, seed_lo, seed_hi;
  uint first_quad, first_rem;
};

bool keeps(uint e) {
  return dropout_keeps(e, first_quad, first_rem, drop_site, uvec2(step_lo, step_hi),
                       uvec2(seed_lo, seed_hi), drop_threshold);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint qi = tid / kBlock, kj = tid % kBlock;  // (row, key) in scores, (row, lane) in sums
  const uint ld = staged_stride(D);
  const uint blocks = (rows + kBlock - 1) / kBlock;
  const uint items = sequences * n_head * blocks;
  // An item is the workgroup's: every invocation takes the same trips (barriers inside).
  for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
    const uint blk = item % blocks, h = item / blocks % n_head, s = item / blocks / n_head;
    const uint r0 = blk * kBlock, nq = min(kBlock, rows - r0);
    uint start = first, kv_s = s;
#if ROWS
    const int slot = where_[2 * s], position = where_[2 * s + 1];
    // (The whole workgroup skips the item: no barrier is left waiting.)
    if (slot < 0 || uint(slot) >= slots || position < 0 || uint(position) >= capacity) continue;
    start = uint(position);
    kv_s = uint(slot);
#endif
    const uint q_base = s * q_seq + h * D, o_base = s * o_seq + h * D;
    const uint k_base = kv_s * kv_seq + k_off + h * D, v_base = kv_s * kv_seq + v_off + h * D;
    const bool live = qi < nq;
    const uint pos = start + r0 + qi;       // this invocation's row's position
    const uint last = start + r0 + nq - 1;  // the block's last position
    const uint att_row = ((s * n_head + h) * rows + r0 + qi) * rows;
    barrier();  // the previous item's readers of shared memory are done
    for (uint e = tid; e < kBlock * D; e += 256) {
      const uint r = e / D, c = e % D;
      tile_a[r * ld + c] = r < nq ? q[q_base + (r0 + r) * ldq + c] : 0.0;
    }
    float m = minus_inf(), l = 0.0;  // (kept by the row's invocation kj == 0)
    float acc[kAccs];
    for (uint i = 0; i < kAccs; ++i) acc[i] = 0.0;
    for (uint k0 = 0; k0 <= last; k0 += kBlock) {
      const uint nk = min(kBlock, last + 1 - k0);
      barrier();  // the previous tile's readers are done
      for (uint e = tid; e < kBlock * D; e += 256) {
        const uint r = e / D, c = e % D;
        const bool in_tile = r < nk;
        tile_b[r * ld + c] = in_tile ? key_at(k_base + (k0 + r) * ldkv + c) : 0.0;
        tile_c[r * ld + c] = in_tile ? value_at(v_base + (k0 + r) * ldkv + c) : 0.0;
      }
      barrier();
      const bool row_here = live && k0 <= pos;  // the tile holds keys this row sees
      float score = minus_inf(), weight = 1.0;  // weight: the dropout's factor
      if (row_here && k0 + kj <= pos) {
        score = dot_ab(qi, kj, D, ld);
        if (write_att != 0u) att[att_row + k0 + kj] = score;
        if (drop_threshold != 0u) weight = keeps(att_row + k0 + kj) ? keep_scale : 0.0;
      }
      cells_a[qi * (kBlock + 1) + kj] = score;
      cells_b[qi * (kBlock + 1) + kj] = weight;
      barrier();
      if (kj == 0 && row_here) {
        float mt = m;
        for (uint j = 0; j < kBlock; ++j) mt = max(mt, cells_a[qi * (kBlock + 1) + j]);
        // The first tile holds position 0, so mt is finite and exp(-inf) = 0 drops the empty sum.
        const float c = exp((m - mt) * scale);
        precise float sum = l * c;
        for (uint j = 0; j < kBlock; ++j) {
          const float sj = cells_a[qi * (kBlock + 1) + j];
          const float p = sj == minus_inf() ? 0.0 : exp((sj - mt) * scale);
          const float w = cells_b[qi * (kBlock + 1) + j];
          cells_a[qi * (kBlock + 1) + j] = drop_threshold != 0u ? p * w : p;
          sum += p;
        }
        m = mt;
        l = sum;
        row_a[qi] = c;
      }
      barrier();
      if (row_here) {
        const float c = row_a[qi];
        const uint n = min(nk, pos + 1 - k0);  // the positions this row sees
        for (uint i = 0; i < kAccs; ++i) {
          const uint d = kj + kBlock * i;
          if (d >= D) break;
          precise float a = acc[i] * c;
          for (uint j = 0; j < n; ++j)
            a = fma(cells_a[qi * (kBlock + 1) + j], tile_c[j * ld + d], a);
          acc[i] = a;
        }
      }
    }
    barrier();  // the last tile's sums have read row_a
    if (kj == 0 && live) {
      row_a[qi] = 1.0 / l;
      row_b[qi] = m;
    }
    barrier();
    if (live) {
      const float inv = row_a[qi];
      for (uint i = 0; i < kAccs; ++i) {
        const uint d = kj + kBlock * i;
        if (d < D) out_[o_base + (r0 + qi) * ldo + d] = acc[i] * inv;
      }
      if (write_att != 0u) {
        const float mx = row_b[qi];
        // Positions kj, kj + 16, ...: the scores this invocation wrote, and the zeros past pos.
        for (uint j = kj; j < rows; j += kBlock) {
          float p = j <= pos ? exp((att[att_row + j] - mx) * scale) * inv : 0.0;
          if (drop_threshold != 0u && j <= pos && !keeps(att_row + j)) p = -p;
          att[att_row + j] = p;
        }
      }
    }
  }
}
