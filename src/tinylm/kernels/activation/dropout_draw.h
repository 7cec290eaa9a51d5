#pragma once
// Dropout's draws (kernels/activation/dropout.h) for kernels that drop inside their own loops
// (dropout itself; the attention weights in kernels/attention/causal.cpp), written once for
// every level. Included after kernels/cpu/vec.h, like vec_math.h.
#include <algorithm>
#include <cstdint>

#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

// Philox4x32-10 on 16 counters at once (lane i: counter {c0 + i, c1, c2, c3}); the rounds of
// core/philox.h, which the tests hold it to. Plain lane loops, vectorized by the compiler at
// each level (integer arithmetic: the same bits wherever it runs).
inline void philox16(uint32_t out[4][16], uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
              uint64_t seed) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t x0[16], x1[16], x2[16], x3[16];
  for (int i = 0; i < 16; ++i) {
    x0[i] = c0 + static_cast<uint32_t>(i);
    x1[i] = c1;
    x2[i] = c2;
    x3[i] = c3;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 16; ++i) {
      const uint64_t p0 = static_cast<uint64_t>(x0[i]) * kM0;
      const uint64_t p1 = static_cast<uint64_t>(x2[i]) * kM1;
      const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x1[i] ^ k0;
      const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x3[i] ^ k1;
      x1[i] = static_cast<uint32_t>(p1);
      x3[i] = static_cast<uint32_t>(p0);
      x0[i] = y0;
      x2[i] = y2;
    }
    k0 += kW0;
    k1 += kW1;
  }
  for (int i = 0; i < 16; ++i) {
    out[0][i] = x0[i];
    out[1][i] = x1[i];
    out[2][i] = x2[i];
    out[3][i] = x3[i];
  }
}

constexpr int64_t kDropoutGroup = 64;  // elements per Philox batch: 16 counters x 4 words

// Writes the masks of elements [e0, e1): global elements [first + e0, first + e1), drawn in
// groups of kDropoutGroup aligned in the whole tensor.
inline void dropout_mask_range(uint8_t* mask, int64_t e0, int64_t e1, uint32_t threshold, DropoutSite w) {
  const uint32_t s_lo = static_cast<uint32_t>(w.step), s_hi = static_cast<uint32_t>(w.step >> 32);
  const uint64_t lo = w.first + static_cast<uint64_t>(e0), hi = w.first + static_cast<uint64_t>(e1);
  for (uint64_t g = lo / kDropoutGroup * kDropoutGroup; g < hi; g += kDropoutGroup) {
    uint32_t out[4][16];
    philox16(out, static_cast<uint32_t>(g / 4), w.site, s_lo, s_hi, w.seed);
    uint8_t m[kDropoutGroup];
    for (int i = 0; i < 16; ++i) {
      for (int word = 0; word < 4; ++word) m[4 * i + word] = (out[word][i] >> 8) >= threshold;
    }
    const uint64_t from = std::max(g, lo), to = std::min(g + kDropoutGroup, hi);
    std::copy(m + (from - g), m + (to - g), mask + (from - w.first));
  }
}

TINYLM_LEVEL_END
