#pragma once
// Dropout's draws (kernels/activation/dropout.h) for kernels that drop inside their own loops
// (dropout itself; the attention weights in kernels/attention/causal.cpp), written once for
// every level. Included after kernels/cpu/vec.h, like vec_math.h.
#include <algorithm>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

// Philox's lanes as one register of the level (the compiler's vector extension): 16 uint32 at
// avx512, 8 at avx2, 4 at the generic level; a group of 16 counters takes 1, 2 or 4 of them.
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
constexpr int kPhiloxBytes = 64;
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX2
constexpr int kPhiloxBytes = 32;
#else
constexpr int kPhiloxBytes = 16;
#endif
using u32v = uint32_t __attribute__((vector_size(kPhiloxBytes)));
using u64v = uint64_t __attribute__((vector_size(kPhiloxBytes)));
constexpr int kPhiloxLanes = kPhiloxBytes / 4;

// The low 32 bits of each of w's 64-bit lanes times k, as 64-bit products: pmuludq on x86 (left
// to itself the compiler multiplies all 64 bits: vpmullq at avx512, shifts and adds at avx2).
TINYLM_INLINE u64v mul_low_halves(const u64v& w, uint32_t k) {
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
  // (The zero-masked form: GCC 12 warns on the plain one, kernels/cpu/vec_avx512.h.)
  return __builtin_bit_cast(
      u64v, _mm512_maskz_mul_epu32(0xff, __builtin_bit_cast(__m512i, w), _mm512_set1_epi64(k)));
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX2
  return __builtin_bit_cast(
      u64v, _mm256_mul_epu32(__builtin_bit_cast(__m256i, w), _mm256_set1_epi64x(k)));
#elif defined(__SSE2__)
  return __builtin_bit_cast(u64v,
                            _mm_mul_epu32(__builtin_bit_cast(__m128i, w), _mm_set1_epi64x(k)));
#else
  return (w & 0xffffffffu) * k;
#endif
}

// The 64-bit products x * k of each lane, as their high and low words: the even lanes and the
// odd ones (shifted down) as 32 x 32 -> 64 products.
TINYLM_INLINE void mul_wide(const u32v& x, uint32_t k, u32v& hi, u32v& lo) {
  const u64v w = __builtin_bit_cast(u64v, x);
  const u64v even = mul_low_halves(w, k), odd = mul_low_halves(w >> 32, k);
  lo = __builtin_bit_cast(u32v, (even & 0xffffffffu) | (odd << 32));
  hi = __builtin_bit_cast(u32v, (even >> 32) | (odd & ~0xffffffffull));
}

// Philox4x32-10 on kPhiloxLanes counters at once (lane i: counter {c0 + i, c1, c2, c3}); the
// rounds of core/philox.h, which the tests hold it to (integer arithmetic: the same bits at
// every level). Word w of lane i in out[w][i].
TINYLM_INLINE void philox_lanes(u32v out[4], uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                uint64_t seed) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  u32v x0, x1 = {}, x2 = {}, x3 = {};
  for (int i = 0; i < kPhiloxLanes; ++i) x0[i] = c0 + static_cast<uint32_t>(i);
  x1 += c1;
  x2 += c2;
  x3 += c3;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    u32v hi0, lo0, hi1, lo1;
    mul_wide(x0, kM0, hi0, lo0);
    mul_wide(x2, kM1, hi1, lo1);
    x0 = hi1 ^ x1 ^ k0;
    x2 = hi0 ^ x3 ^ k1;
    x1 = lo1;
    x3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

constexpr int64_t kDropoutGroup = 64;  // elements per Philox batch: 16 counters x 4 words

// Writes the masks of elements [e0, e1): global elements [first + e0, first + e1), drawn in
// groups of kDropoutGroup aligned in the whole tensor.
inline void dropout_mask_range(uint8_t* mask, int64_t e0, int64_t e1, uint32_t threshold,
                               DropoutSite w) {
  const uint32_t s_lo = static_cast<uint32_t>(w.step), s_hi = static_cast<uint32_t>(w.step >> 32);
  const uint64_t lo = w.first + static_cast<uint64_t>(e0), hi = w.first + static_cast<uint64_t>(e1);
  for (uint64_t g = lo / kDropoutGroup * kDropoutGroup; g < hi; g += kDropoutGroup) {
    // Element 4 i + word of the group is word `word` of counter i: counter i's four mask bytes
    // in one uint32, little-endian.
    uint8_t m[kDropoutGroup];
    for (int part = 0; part < 16 / kPhiloxLanes; ++part) {
      u32v out[4];
      philox_lanes(out, static_cast<uint32_t>(g / 4) + static_cast<uint32_t>(part * kPhiloxLanes),
                   w.site, s_lo, s_hi, w.seed);
      u32v bytes = {};
      for (int word = 0; word < 4; ++word) {
        const u32v keep = __builtin_bit_cast(u32v, (out[word] >> 8) >= threshold);
        bytes |= (keep & 1u) << (8 * word);
      }
      std::memcpy(m + part * 4 * kPhiloxLanes, &bytes, sizeof bytes);
    }
    const uint64_t from = std::max(g, lo), to = std::min(g + kDropoutGroup, hi);
    std::copy(m + (from - g), m + (to - g), mask + (from - w.first));
  }
}

TINYLM_LEVEL_END
