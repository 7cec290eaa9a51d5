// Vulkan elementwise passes and reductions (kernels/vulkan/elementwise.h) on device 0 (lavapipe
// in CI): add, scale, scale_and_check and accumulate_and_clear bit for bit against the CPU
// (one rounded operation per element); sum_squares against a double sum within the bound
// elementwise.h states; the same bytes each run. Every test runs without and with the Khronos
// validation layer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/optim/grad_ops.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/elementwise.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

class GpuElementwise : public GpuTest {};

const int64_t kSizes[] = {1, 7, 257, 3001};

TEST_P(GpuElementwise, AddAndScaleAreTheCpusBitForBit) {
  for (const int64_t n : kSizes) {
    const size_t c = static_cast<size_t>(n);
    const std::string where = "n=" + std::to_string(n);
    const Floats a = normal_floats(c, 41), b = normal_floats(c, 42, 3.0);
    const float s = 0.3f;
    Floats sum(c), scaled(c);
    for (size_t i = 0; i < c; ++i) {
      sum[i] = a[i] + b[i];
      scaled[i] = s * a[i];
    }
    const Buffer ab = upload(a), bb = upload(b);
    for (int run = 0; run < 2; ++run) {
      const std::string w = where + " run " + std::to_string(run);
      Buffer y = zeros(c), z = zeros(c), in_place = upload(a), scaled_in_place = upload(a);
      vulkan::add(*context_, y, ab, bb, n);
      vulkan::scale(*context_, z, ab, s, n);
      vulkan::add(*context_, in_place, in_place, bb, n);
      vulkan::scale(*context_, scaled_in_place, scaled_in_place, s, n);
      expect_same_bytes(w + " add", vulkan::download_floats(y, c), sum);
      expect_same_bytes(w + " scale", vulkan::download_floats(z, c), scaled);
      expect_same_bytes(w + " add in place", vulkan::download_floats(in_place, c), sum);
      expect_same_bytes(w + " scale in place", vulkan::download_floats(scaled_in_place, c), scaled);
    }
  }
}

TEST_P(GpuElementwise, FillWritesTheValuesBits) {
  for (const int64_t n : kSizes) {
    const size_t c = static_cast<size_t>(n);
    for (const float value : {0.0f, -0.0f, 1.5f}) {
      Buffer y = upload(normal_floats(c + 1, 47));
      vulkan::fill(*context_, y, value, n);
      Floats want(c, value);
      want.push_back(normal_floats(c + 1, 47)[c]);  // past n: untouched
      expect_same_bytes("n=" + std::to_string(n) + " value=" + fmt(value),
                        vulkan::download_floats(y, c + 1), want);
    }
  }
}

float float_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Unscaling (1 / 65536), clipping-like factors, a factor of 1 (skipped: a signalling NaN keeps
// its bits), and non-finite values in the first, a middle and the last workgroup, or made by
// the product's overflow.
TEST_P(GpuElementwise, ScaleAndCheckIsTheCpusBitForBit) {
  for (const int64_t n : {int64_t{1}, int64_t{257}, int64_t{70001}}) {
    const size_t c = static_cast<size_t>(n);
    const Floats g0 = normal_floats(c, 43);
    struct Variant {
      double factor;
      size_t at;
      float value;
    };
    const float inf = std::numeric_limits<float>::infinity();
    const Variant variants[] = {
        {1.0 / 65536, c, 0}, {0.37, c, 0},       {1.0, 0, float_of(0x7f800001u)},
        {0.5, c - 1, inf},   {2.0, c / 2, -inf}, {4.0, c / 3, 1e38f},
        {1.0, c, 0}};
    for (const Variant& v : variants) {
      const std::string where = "n=" + std::to_string(n) + " factor=" + fmt(v.factor) +
                                " at=" + std::to_string(v.at) + " value=" + fmt(v.value);
      Floats g = g0;
      if (v.at < c) g[v.at] = v.value;
      Floats want = g;
      const bool want_ok = optim::scale_and_check(std::span<float>(want), v.factor);
      for (int run = 0; run < 2; ++run) {
        Buffer gb = upload(g), scratch = zeros(static_cast<size_t>(vulkan::reduce_words(n)));
        EXPECT_EQ(vulkan::scale_and_check(*context_, gb, scratch, v.factor, n), want_ok) << where;
        expect_same_bytes(where + " run " + std::to_string(run), vulkan::download_floats(gb, c),
                          want);
      }
    }
  }
}

// Σ x² against the double sum: all terms >= 0, so relative error at most
// (ceil(n / (256 G)) + 17) 2^-24 (elementwise.h): the strided walk, 8 levels of each tree, the
// square's rounding.
TEST_P(GpuElementwise, SumSquaresIsWithinItsBoundWithTheSameBitsEachRun) {
  for (const int64_t n : {1, 255, 256, 257, 65539, 300001}) {
    const size_t c = static_cast<size_t>(n);
    const Floats x = normal_floats(c, 44, 2.0, 0.5);
    double want = 0;
    for (const float v : x) want += static_cast<double>(v) * v;
    const int64_t groups = vulkan::reduce_groups(n);
    const int64_t walk = (n + 256 * groups - 1) / (256 * groups);
    const double bound = static_cast<double>(walk + 17) * kF32 * want;
    const Buffer xb = upload(x);
    Buffer scratch = zeros(static_cast<size_t>(vulkan::reduce_words(n)));
    const float got = vulkan::sum_squares(*context_, scratch, xb, n);
    const float again = vulkan::sum_squares(*context_, scratch, xb, n);
    EXPECT_LE(std::abs(got - want), bound)
        << "n=" << n << " got " << fmt(got) << " want " << fmt(want);
    EXPECT_EQ(float_bits(got), float_bits(again)) << "n=" << n;
  }
}

TEST_P(GpuElementwise, AccumulateAndClearIsTheCpusBitForBit) {
  for (const int64_t n : kSizes) {
    const size_t c = static_cast<size_t>(n);
    Floats src = normal_floats(c, 45, 100.0);
    src[c / 2] = 1e5f;  // past f16's range: inf when rounded
    const Floats acc0 = normal_floats(c, 46);
    for (const bool round_f16 : {false, true}) {
      const std::string where =
          "n=" + std::to_string(n) + " round_f16=" + std::to_string(round_f16);
      Floats want = acc0, cleared = src;
      kernels::accumulate_and_clear(want.data(), cleared.data(), n, round_f16);
      for (int run = 0; run < 2; ++run) {
        Buffer acc = upload(acc0), sb = upload(src);
        vulkan::accumulate_and_clear(*context_, acc, sb, n, round_f16);
        expect_same_bytes(where + " acc", vulkan::download_floats(acc, c), want);
        expect_same_bytes(where + " src", vulkan::download_floats(sb, c), cleared);
      }
    }
  }
}

TEST_P(GpuElementwise, OpsCheckTheirSizes) {
  Buffer a = zeros(10), b = zeros(11), scratch = zeros(1);
  test::expect_error([&] { vulkan::add(*context_, b, a, b, 11); },
                     {"vulkan add: a holds 10 floats, needs 11"});
  test::expect_error([&] { vulkan::sum_squares(*context_, scratch, b, 11); },
                     {"vulkan sum_squares: scratch holds 1 words, needs 2"});
  test::expect_error([&] { vulkan::scale_and_check(*context_, b, scratch, 0.5, 11); },
                     {"vulkan scale_and_check: scratch holds 1 words, needs 2"});
  Buffer enough = zeros(2);
  EXPECT_EQ(vulkan::sum_squares(*context_, enough, b, 0), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuElementwise, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
