#pragma once
// bf16_dot.h's contract as plain loops: what the tests check the VDPBF16PS kernels against.
// Weights here are row-major (nin, nout) for in_out and (nout, nin) for out_in.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tinylm/kernels/cpu/half.h"

namespace tinylm::kernels::reference {

constexpr float kBf16Min = 0x1p-126f;  // the least normal float (and bf16)

// A float rounded to bf16 to nearest even, as bf16_dot.h's activations are: zero (keeping
// the sign) below kBf16Min in magnitude, a NaN kept quiet.
inline Bf16 bf16_dot_round(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40u)};
  if ((u & 0x7f800000u) == 0) return {static_cast<uint16_t>((u >> 16) & 0x8000u)};
  return {static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}

// A bf16 as the instruction reads it: subnormals are zero.
inline float bf16_dot_value(Bf16 v) { return (v.bits & 0x7f80u) == 0 ? 0.0f : to_float(v); }

// One product added as VDPBF16PS adds it: exact product, one rounding, and a result below
// kBf16Min in magnitude flushed to +0.
inline float bf16_dot_add(float acc, Bf16 x, Bf16 w) {
  const float s = std::fma(bf16_dot_value(x), bf16_dot_value(w), acc);
  return std::fabs(s) < kBf16Min ? 0.0f : s;
}

// y = x W + b, W (nin, nout) row-major: chunks of 64 inputs, per chunk one chain from +0 over
// its pairs (input 2p + 1's product first, then 2p's), the chunks then added to the bias in
// order. x is rounded here.
inline void bf16_dot_in_out(float* y, const float* x, const Bf16* w, const float* b, int64_t rows,
                            int64_t nin, int64_t nout) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < nout; ++c) {
      float s = b ? b[c] : 0.0f;
      for (int64_t i0 = 0; i0 < nin; i0 += 64) {
        float chain = 0.0f;
        for (int64_t i = i0; i < i0 + 64 && i < nin; i += 2) {
          chain = bf16_dot_add(chain, bf16_dot_round(x[r * nin + i + 1]), w[(i + 1) * nout + c]);
          chain = bf16_dot_add(chain, bf16_dot_round(x[r * nin + i]), w[i * nout + c]);
        }
        s += chain;
      }
      y[r * nout + c] = s;
    }
  }
}

// y[r][o] = x[r] . W[o], W (nout, nin) row-major: 16 lane chains from +0, lane j over inputs
// 32 k + 2 j + 1 then 32 k + 2 j for k in order, the lanes then summed as vec.h's hsum does.
inline void bf16_dot_out_in(float* y, const float* x, const Bf16* w, int64_t rows, int64_t nin,
                            int64_t nout) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < nout; ++o) {
      float lane[16] = {};
      for (int64_t k = 0; k < nin; k += 32) {
        for (int j = 0; j < 16; ++j) {
          const int64_t i = k + 2 * j;
          lane[j] = bf16_dot_add(lane[j], bf16_dot_round(x[r * nin + i + 1]), w[o * nin + i + 1]);
          lane[j] = bf16_dot_add(lane[j], bf16_dot_round(x[r * nin + i]), w[o * nin + i]);
        }
      }
      float q[4];
      for (int j = 0; j < 4; ++j) q[j] = (lane[j] + lane[j + 8]) + (lane[j + 4] + lane[j + 12]);
      y[r * nout + o] = (q[0] + q[2]) + (q[1] + q[3]);
    }
  }
}

}  // namespace tinylm::kernels::reference
