// Vulkan casts (kernels/vulkan/cast.h) on device 0 (lavapipe in CI), bit for bit against the
// CPU's (core/dtype.h, kernels/cast/cast.h): widening over all 65536 patterns of f16 and bf16,
// narrowing and rounding over floats that hit every branch (ties both ways, the subnormal
// ranges, the f16 overflow edge, inf, NaN with payloads, max) and random bit patterns; halves
// packed two per word with an odd count's last high half 0; the same bytes each run. Every
// test runs without and with the Khronos validation layer.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/kernels/cast/cast.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/cast.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

using vulkan::Half;
using Words = std::vector<uint32_t>;

class GpuCast : public GpuTest {};

uint16_t cpu_to_half(float f, Half t) {
  return t == Half::f16 ? float_to_f16(f) : float_to_bf16(f);
}
float cpu_from_half(uint16_t h, Half t) {
  return t == Half::f16 ? f16_to_float(h) : bf16_to_float(h);
}
const char* name_of(Half t) { return t == Half::f16 ? "f16" : "bf16"; }

Words pack(const std::vector<uint16_t>& h) {
  Words w(static_cast<size_t>(vulkan::half_words(static_cast<int64_t>(h.size()))), 0);
  for (size_t i = 0; i < h.size(); ++i) w[i / 2] |= static_cast<uint32_t>(h[i]) << (16 * (i % 2));
  return w;
}

// Floats that take every branch of both narrowings, then random bit patterns; an odd count.
Floats narrowing_inputs() {
  std::vector<uint32_t> bits = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,  // zeros, infinities
      0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu,  // NaNs: quiet, signalling, payloads
      0x7f7fffffu, 0xff7fffffu, 0x00000001u, 0x807fffffu,  // max, float subnormals
      0x00800000u, 0x477fe000u, 0x477fefffu, 0x477ff000u,  // min normal; f16 max, its rounding edge
      0x38800000u, 0x387fffffu, 0x33800000u, 0x33000000u,  // f16 min normal; below; 2^-24; 2^-25
      0x33000001u, 0x32ffffffu, 0x3f808000u, 0x3f818000u,  // around half the smallest subnormal;
                                                           // bf16 ties to even, both ways
      0x3f800fffu, 0x3f801000u, 0x3f803000u, 0x3f801001u,  // f16 ties and near-ties
      0x7f7f8000u, 0x7f7fffffu, 0xbf7f8000u, 0x38000000u,  // bf16 rounding to inf; f16 subnormal
  };
  // f16 subnormal ties: (2k + 1) 2^-25 for a few k, both parities.
  for (int k : {0, 1, 2, 3, 511, 1022}) {
    const float f = static_cast<float>(2 * k + 1) * 0x1p-25f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits.push_back(u);
    bits.push_back(u | 0x80000000u);
  }
  std::mt19937 rng(5);
  while (bits.size() < 20001) bits.push_back(static_cast<uint32_t>(rng()));
  Floats f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * 4);
  return f;
}

TEST_P(GpuCast, WideningIsTheCpusForEveryPattern) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  const Buffer src = upload_values(pack(all));
  for (const Half t : {Half::f16, Half::bf16}) {
    Floats want(all.size());
    for (size_t i = 0; i < all.size(); ++i) want[i] = cpu_from_half(all[i], t);
    for (int run = 0; run < 2; ++run) {
      Buffer dst = zeros(all.size());
      vulkan::convert_from_half(*context_, dst, src, 65536, t);
      expect_same_bytes(std::string(name_of(t)) + " run " + std::to_string(run),
                        vulkan::download_floats(dst, all.size()), want);
    }
    // An odd count reads the low half of the last word.
    Buffer three = zeros(3);
    vulkan::convert_from_half(*context_, three, src, 3, t);
    expect_same_bytes(std::string(name_of(t)) + " n=3", vulkan::download_floats(three, 3),
                      Floats(want.begin(), want.begin() + 3));
  }
}

TEST_P(GpuCast, NarrowingAndRoundingAreTheCpus) {
  const Floats x = narrowing_inputs();
  const int64_t n = static_cast<int64_t>(x.size());  // odd
  const Buffer xb = upload(x);
  for (const Half t : {Half::f16, Half::bf16}) {
    const std::string where = name_of(t);
    std::vector<uint16_t> halves(x.size());
    for (size_t i = 0; i < x.size(); ++i) halves[i] = cpu_to_half(x[i], t);
    const Words want = pack(halves);  // the last word's high half 0
    Floats want_rounded(x.size());
    if (t == Half::f16)
      kernels::round_to_f16(want_rounded.data(), x.data(), n);
    else
      kernels::round_to_bf16(want_rounded.data(), x.data(), n);
    for (int run = 0; run < 2; ++run) {
      const std::string w = where + " run " + std::to_string(run);
      Buffer dst = upload_values(Words(want.size(), 0xffffffffu));
      vulkan::convert_to_half(*context_, dst, xb, n, t);
      EXPECT_EQ(download_values<uint32_t>(dst, want.size()), want) << w;
      Buffer rounded = zeros(x.size()), in_place = upload(x);
      vulkan::round_to_half(*context_, rounded, xb, n, t);
      vulkan::round_to_half(*context_, in_place, in_place, n, t);
      expect_same_bytes(w + " rounded", vulkan::download_floats(rounded, x.size()), want_rounded);
      expect_same_bytes(w + " rounded in place", vulkan::download_floats(in_place, x.size()),
                        want_rounded);
    }
  }
}

TEST_P(GpuCast, CastsCheckTheirSizes) {
  Buffer halves = zeros(2), floats = zeros(5);  // 2 words: 4 halves
  test::expect_error([&] { vulkan::convert_to_half(*context_, halves, floats, 5, Half::f16); },
                     {"vulkan convert_to_half: dst holds 4 halves, needs 6"});
  test::expect_error([&] { vulkan::convert_from_half(*context_, floats, halves, 6, Half::bf16); },
                     {"vulkan convert_from_half: dst holds 5 floats, needs 6"});
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuCast, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
