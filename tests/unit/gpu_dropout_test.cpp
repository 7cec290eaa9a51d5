// Vulkan dropout (kernels/vulkan/dropout.h) on device 0 (lavapipe in CI): the masks bit for bit
// the CPU's (kernels::dropout_mask) for seeds, steps, sites, offsets into a sharded tensor
// (first, not always a multiple of 4, up to the counters' limit) and counts not multiples of 4;
// y and dx bit for bit the CPU's float kernels; the same bytes each run. Every test runs
// without and with the Khronos validation layer.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/core/philox.h"
#include "tinylm/kernels/activation/dropout.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/dropout.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

class GpuDropout : public GpuTest {
 protected:
  // The packed mask's bytes (vulkan::mask_words(n) words).
  std::vector<uint8_t> mask_bytes(const Buffer& mask, int64_t n) {
    std::vector<uint8_t> b(static_cast<size_t>(vulkan::mask_words(n)) * 4);
    mask.download(std::as_writable_bytes(std::span<uint8_t>(b)));
    return b;
  }
  Buffer mask_buffer(int64_t n) {
    Buffer b(*context_, static_cast<size_t>(vulkan::mask_words(n)) * 4);
    const std::vector<uint8_t> ones(b.bytes(), 0xab);  // garbage the op must overwrite
    b.upload(std::as_bytes(std::span<const uint8_t>(ones)));
    return b;
  }
};

struct Case {
  uint64_t seed, step;
  uint32_t site;
  uint64_t first;
  int64_t n;
  float rate;
};

std::string describe(const Case& c) {
  return "seed=" + std::to_string(c.seed) + " step=" + std::to_string(c.step) +
         " site=" + std::to_string(c.site) + " first=" + std::to_string(c.first) +
         " n=" + std::to_string(c.n) + " rate=" + fmt(c.rate);
}

// A rate whose threshold equals element 0's draw (w >> 8) exactly: kept (u < rate is false),
// which only the comparison's exact form decides.
Case on_the_threshold() {
  const Case k{77, 3, 2, 5, 9, 0.0f};
  const PhiloxCounter out = philox4x32_10({static_cast<uint32_t>(k.first / 4), k.site, 3, 0},
                                          {static_cast<uint32_t>(k.seed), 0});
  Case c = k;
  c.rate = static_cast<float>(out[k.first % 4] >> 8) / 16777216.0f;
  return c;
}

const Case kCases[] = {
    on_the_threshold(),
    {0, 0, 0, 0, 1, 0.5f},
    {1234, 7, 3, 0, 1001, 0.1f},
    {0xdeadbeefcafef00dull, (uint64_t{1} << 32) + 5, 11, 3, 258, 0.5f},
    {42, 99, 2, 65, 4099, 0.9f},
    {7, 1, 1, 2, 6, 0.0f},
    {9, 2, 5, 1, 70001, 0.25f},                         // past one workgroup's words
    {5, 3, 4, (uint64_t{1} << 34) - 1030, 1030, 0.3f},  // the last counters (g / 4 near 2^32)
};

TEST_P(GpuDropout, MasksAndValuesAreTheCpusBitForBit) {
  for (const Case& k : kCases) {
    const std::string where = describe(k);
    const size_t n = static_cast<size_t>(k.n);
    const DropoutSite site{k.seed, k.step, k.site, k.first};
    const Floats x = normal_floats(n, 31), dy = normal_floats(n, 32);

    std::vector<uint8_t> want_mask(n);
    Floats want_y(n), want_dx(n);
    kernels::dropout_mask(want_mask.data(), k.n, k.rate, site);
    std::vector<uint8_t> fwd_mask(n);
    kernels::dropout_forward(want_y.data(), fwd_mask.data(), x.data(), k.n, k.rate, site);
    kernels::dropout_backward(want_dx.data(), dy.data(), want_mask.data(), k.n, k.rate);
    ASSERT_EQ(fwd_mask, want_mask) << where;
    if (&k == &kCases[0]) {
      ASSERT_EQ(want_mask[0], 1) << where << ": not on the threshold";
    }
    std::vector<uint8_t> padded = want_mask;  // the bytes of the last word past n are 0
    padded.resize(static_cast<size_t>(vulkan::mask_words(k.n)) * 4, 0);

    const Buffer xb = upload(x), dyb = upload(dy);
    for (int run = 0; run < 2; ++run) {  // twice from the same inputs: the same bytes
      const std::string w = where + " run " + std::to_string(run);
      Buffer mask = mask_buffer(k.n), mask2 = mask_buffer(k.n);
      vulkan::dropout_mask(*context_, mask, k.n, k.rate, site);
      EXPECT_EQ(mask_bytes(mask, k.n), padded) << w << " mask";

      Buffer y = zeros(n), dx = zeros(n);
      vulkan::dropout_forward(*context_, y, mask2, xb, k.n, k.rate, site);
      vulkan::dropout_backward(*context_, dx, dyb, mask2, k.n, k.rate);
      EXPECT_EQ(mask_bytes(mask2, k.n), padded) << w << " forward's mask";
      expect_same_bytes(w + " y", vulkan::download_floats(y, n), want_y);
      expect_same_bytes(w + " dx", vulkan::download_floats(dx, n), want_dx);

      // In place: y over x, dx over dy.
      Buffer in_place = upload(x), dx_in_place = upload(dy), mask3 = mask_buffer(k.n);
      vulkan::dropout_forward(*context_, in_place, mask3, in_place, k.n, k.rate, site);
      vulkan::dropout_backward(*context_, dx_in_place, dx_in_place, mask3, k.n, k.rate);
      expect_same_bytes(w + " y in place", vulkan::download_floats(in_place, n), want_y);
      expect_same_bytes(w + " dx in place", vulkan::download_floats(dx_in_place, n), want_dx);
    }
  }
}

TEST_P(GpuDropout, BadArgumentsAreOneLineErrors) {
  Buffer x = zeros(10), y = zeros(10), mask = mask_buffer(8);
  const DropoutSite site{1, 2, 3, 0};
  test::expect_error([&] { vulkan::dropout_forward(*context_, y, mask, x, 8, 1.0f, site); },
                     {"vulkan dropout_forward: rate must be in [0, 1), got 1"});
  test::expect_error([&] { vulkan::dropout_forward(*context_, y, mask, x, 9, 0.5f, site); },
                     {"vulkan dropout_forward: mask holds 8 bytes, needs 12"});
  test::expect_error([&] { vulkan::dropout_backward(*context_, y, x, mask, 11, 0.5f); },
                     {"vulkan dropout_backward: dx holds 10 floats, needs 11"});
  test::expect_error(
      [&] {
        vulkan::dropout_mask(*context_, mask, 8, 0.5f, {1, 2, 3, (uint64_t{1} << 34) - 7});
      },
      {"vulkan dropout_mask: elements 17179869177 + 8 are out of range"});
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuDropout, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
