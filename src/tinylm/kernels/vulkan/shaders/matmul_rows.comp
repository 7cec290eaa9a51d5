#version 450
// matmul.comp for a few rows of C (M <= kRows: a decode step, a short prompt's head): one
// invocation per column of C holds that column's M accumulators, walking k in increasing order,
// so each output is the same fma chain, from the same zero, as in matmul.comp's tiles: the same
// bits, without 64-row tiles of which all but M rows would be padding. The invocations of a
// workgroup read neighbouring columns of B (coalesced when B is stored untransposed) and the
// same element of A.
#extension GL_EXT_control_flow_attributes : require
#include "matmul_types.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Cbuf { float c[]; };
layout(std430, binding = 1) readonly buffer Abuf { uint a[]; };
layout(std430, binding = 2) readonly buffer Bbuf { uint b[]; };
layout(push_constant) uniform Push {
  uint M, N, K;  // M <= kRows; K = 0 when the product contributes nothing
  float alpha, beta;
  uint lda, ldb, ldc;
  uint a_offset, b_offset, c_offset;
  uint a_type, b_type;
  uint ta, tb;
};
const uint kRows = 8;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint n = gl_GlobalInvocationID.x; n < N; n += stride) {
    if (M == 1u) {  // a decode step: one chain, nothing of the other rows' loads
      float s = 0.0;
      for (uint k = 0; k < K; ++k) {
        const uint bt = b_offset + (tb == 0u ? k * ldb + n : n * ldb + k);
        const uint at = a_offset + (ta == 0u ? k : k * lda);
        s = fma(widen(a[word_of(at, a_type)], at, a_type), widen(b[word_of(bt, b_type)], bt, b_type),
                s);
      }
      const uint at = c_offset + n;
      const float product = K == 0u ? 0.0 : alpha * s;
      if (beta == 0.0)
        c[at] = product;
      else if (K == 0u)
        c[at] = beta * c[at];
      else
        c[at] = fma(beta, c[at], product);
      continue;
    }
    float acc[kRows];
    [[unroll]] for (uint i = 0; i < kRows; ++i) acc[i] = 0.0;
    for (uint k = 0; k < K; ++k) {
      const uint bt = b_offset + (tb == 0u ? k * ldb + n : n * ldb + k);
      const float bv = widen(b[word_of(bt, b_type)], bt, b_type);
      [[unroll]] for (uint i = 0; i < kRows; ++i) {
        if (i < M) {
          const uint at = a_offset + (ta == 0u ? i * lda + k : k * lda + i);
          acc[i] = fma(widen(a[word_of(at, a_type)], at, a_type), bv, acc[i]);
        }
      }
    }
    [[unroll]] for (uint i = 0; i < kRows; ++i) {
      if (i >= M) continue;
      const uint at = c_offset + i * ldc + n;
      const float product = K == 0u ? 0.0 : alpha * acc[i];
      if (beta == 0.0)
        c[at] = product;
      else if (K == 0u)
        c[at] = beta * c[at];
      else
        c[at] = fma(beta, c[at], product);
    }
  }
}
