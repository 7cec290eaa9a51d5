#include "tinylm/kernels/dropout.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

namespace {
using u32x16 = uint32_t __attribute__((vector_size(64)));
using u64x16 = uint64_t __attribute__((vector_size(128)));

// Philox4x32-10 on 16 counters at once (lane i: counter {c0[i], c1, c2, c3}); the same rounds
// as core/philox.h, which the tests hold it to.
void philox16(u32x16 out[4], u32x16 c0, uint32_t c1, uint32_t c2, uint32_t c3, uint64_t seed) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  u32x16 x0 = c0, x1 = u32x16{} + c1, x2 = u32x16{} + c2, x3 = u32x16{} + c3;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const u64x16 p0 = __builtin_convertvector(x0, u64x16) * kM0;
    const u64x16 p1 = __builtin_convertvector(x2, u64x16) * kM1;
    const u32x16 hi0 = __builtin_convertvector(p0 >> 32, u32x16), lo0 = __builtin_convertvector(p0, u32x16);
    const u32x16 hi1 = __builtin_convertvector(p1 >> 32, u32x16), lo1 = __builtin_convertvector(p1, u32x16);
    x0 = hi1 ^ x1 ^ k0;
    x1 = lo1;
    x2 = hi0 ^ x3 ^ k1;
    x3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

// Keeps u >= rate, i.e. (w >> 8) >= ceil(rate * 2^24), exactly.
uint32_t keep_threshold(float rate) {
  return static_cast<uint32_t>(std::ceil(static_cast<double>(rate) * 16777216.0));
}

constexpr int64_t kGroup = 64;           // elements per vector batch: 16 lanes x 4 words
constexpr int64_t kChunk = 64 * kGroup;  // elements per parallel task

// Writes the masks of elements [e0, e1) (e0 a multiple of kGroup).
void mask_range(uint8_t* mask, int64_t e0, int64_t e1, uint32_t threshold, DropoutSite w) {
  const uint32_t s_lo = static_cast<uint32_t>(w.step), s_hi = static_cast<uint32_t>(w.step >> 32);
  u32x16 lane;
  for (int i = 0; i < 16; ++i) lane[i] = static_cast<uint32_t>(i);
  for (int64_t g = e0; g < e1; g += kGroup) {
    u32x16 out[4];
    philox16(out, lane + static_cast<uint32_t>(g / 4), w.site, s_lo, s_hi, w.seed);
    uint8_t m[kGroup];
    for (int i = 0; i < 16; ++i) {
      for (int word = 0; word < 4; ++word) m[4 * i + word] = (out[word][i] >> 8) >= threshold;
    }
    const int64_t n = std::min(kGroup, e1 - g);
    std::copy(m, m + n, mask + g);
  }
}

void check_args(int64_t n, float rate) {
  check(rate >= 0.0f && rate < 1.0f, "dropout: rate must be in [0, 1), got ", rate);
  check(n >= 0 && n < (int64_t{1} << 34), "dropout: ", n, " elements is out of range");
}
}  // namespace

void dropout_mask(uint8_t* mask, int64_t n, float rate, DropoutSite where) {
  check_args(n, rate);
  const uint32_t threshold = keep_threshold(rate);
  parallel_for(0, (n + kChunk - 1) / kChunk, simd::grain_for(kChunk), [&](int64_t c) {
    mask_range(mask, c * kChunk, std::min(n, (c + 1) * kChunk), threshold, where);
  });
}

template <class T>
void dropout_forward(T* y, uint8_t* mask, const T* x, int64_t n, float rate, DropoutSite where) {
  check_args(n, rate);
  const uint32_t threshold = keep_threshold(rate);
  const T scale = T(1) / (T(1) - static_cast<T>(rate));
  parallel_for(0, (n + kChunk - 1) / kChunk, simd::grain_for(kChunk), [&](int64_t c) {
    const int64_t e0 = c * kChunk, e1 = std::min(n, e0 + kChunk);
    mask_range(mask, e0, e1, threshold, where);
    for (int64_t e = e0; e < e1; ++e) y[e] = mask[e] ? x[e] * scale : T(0);
  });
}

template <class T>
void dropout_backward(T* dx, const T* dy, const uint8_t* mask, int64_t n, float rate) {
  const T scale = T(1) / (T(1) - static_cast<T>(rate));
  parallel_for(0, (n + kChunk - 1) / kChunk, simd::grain_for(kChunk), [&](int64_t c) {
    const int64_t e1 = std::min(n, (c + 1) * kChunk);
    for (int64_t e = c * kChunk; e < e1; ++e) dx[e] = mask[e] ? dy[e] * scale : T(0);
  });
}

template void dropout_forward<float>(float*, uint8_t*, const float*, int64_t, float, DropoutSite);
template void dropout_forward<double>(double*, uint8_t*, const double*, int64_t, float, DropoutSite);
template void dropout_backward<float>(float*, const float*, const uint8_t*, int64_t, float);
template void dropout_backward<double>(double*, const double*, const uint8_t*, int64_t, float);

}  // namespace tinylm::kernels
