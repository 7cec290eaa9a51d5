#version 450
// C = alpha · op(A) · op(B) + beta · C (kernels/vulkan/matmul.h). One 64×64 tile of C per
// workgroup (looping over tiles), K in slabs of 16 staged in shared memory, each invocation a
// 4×4 micro-tile: rows ty + 16i, columns tx + 16j, so neighbours read neighbouring shared words.
// Each output is one fma chain over k in increasing order.
// The micro-tile loops are unrolled ([[unroll]], a hint in SPIR-V, no device feature) so the
// accumulators index as constants and can stay in registers.
#extension GL_EXT_control_flow_attributes : require
#include "matmul_types.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Cbuf { float c[]; };
layout(std430, binding = 1) readonly buffer Abuf { uint a[]; };
layout(std430, binding = 2) readonly buffer Bbuf { uint b[]; };
layout(push_constant) uniform Push {
  uint M, N, K;  // K = 0 when the product contributes nothing (K = 0 or alpha = 0)
  float alpha, beta;
  uint lda, ldb, ldc;
  uint a_offset, b_offset, c_offset;
  uint a_type, b_type;
  uint ta, tb;  // 1: the operand is stored transposed
};

const uint kTile = 64;
const uint kSlab = 16;
// As[k][i] = op(A)[m0 + i, k0 + k], Bs[k][j] = op(B)[k0 + k, n0 + j]. One padding column: an
// operand staged along k (A as stored, Bᵀ) writes a column, whose words then fall in different
// banks.
shared float As[kSlab][kTile + 1];
shared float Bs[kSlab][kTile + 1];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint tx = t % 16, ty = t / 16;
  const uint tiles_n = (N + kTile - 1) / kTile;
  const uint tiles = ((M + kTile - 1) / kTile) * tiles_n;
  // The tile is the workgroup's, so every invocation takes the same trips (barriers inside).
  for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
    const uint m0 = (tile / tiles_n) * kTile, n0 = (tile % tiles_n) * kTile;
    float acc[4][4];
    [[unroll]] for (uint i = 0; i < 4; ++i)
      [[unroll]] for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;

    for (uint k0 = 0; k0 < K; k0 += kSlab) {
      // Stage 64×16 of op(A) and 16×64 of op(B), four elements per invocation each, walking
      // each operand along its stored rows.
      [[unroll]] for (uint s = 0; s < 4; ++s) {
        const uint e = t + 256 * s;
        uint i, k;
        if (ta == 0u) {
          k = e % kSlab;
          i = e / kSlab;
        } else {
          i = e % kTile;
          k = e / kTile;
        }
        float v = 0.0;
        if (m0 + i < M && k0 + k < K) {
          const uint at = a_offset + (ta == 0u ? (m0 + i) * lda + k0 + k : (k0 + k) * lda + m0 + i);
          v = widen(a[word_of(at, a_type)], at, a_type);
        }
        As[k][i] = v;

        uint j;
        if (tb == 0u) {
          j = e % kTile;
          k = e / kTile;
        } else {
          k = e % kSlab;
          j = e / kSlab;
        }
        v = 0.0;
        if (n0 + j < N && k0 + k < K) {
          const uint bt = b_offset + (tb == 0u ? (k0 + k) * ldb + n0 + j : (n0 + j) * ldb + k0 + k);
          v = widen(b[word_of(bt, b_type)], bt, b_type);
        }
        Bs[k][j] = v;
      }
      barrier();
      // Only the slab's real k: a padded zero term could still turn a -0 sum into +0.
      const uint kn = min(kSlab, K - k0);
      for (uint k = 0; k < kn; ++k) {
        float av[4], bv[4];
        [[unroll]] for (uint i = 0; i < 4; ++i) av[i] = As[k][ty + 16 * i];
        [[unroll]] for (uint j = 0; j < 4; ++j) bv[j] = Bs[k][tx + 16 * j];
        [[unroll]] for (uint i = 0; i < 4; ++i)
          [[unroll]] for (uint j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
      barrier();  // everyone has read the slab before the next one is staged
    }

    [[unroll]] for (uint i = 0; i < 4; ++i) {
      const uint m = m0 + ty + 16 * i;
      if (m >= M) continue;
      [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uint n = n0 + tx + 16 * j;
        if (n >= N) continue;
        const uint at = c_offset + m * ldc + n;
        const float product = K == 0u ? 0.0 : alpha * acc[i][j];
        // beta = 0 never reads C (NaN there stays out); K = 0 gives beta · C exactly.
        if (beta == 0.0)
          c[at] = product;
        else if (K == 0u)
          c[at] = beta * c[at];
        else
          c[at] = fma(beta, c[at], product);
      }
    }
  }
}
