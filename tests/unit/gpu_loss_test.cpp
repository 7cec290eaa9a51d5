// The Vulkan softmax cross-entropy (kernels/vulkan/loss.h) on device 0 (lavapipe in CI) against
// the CPU kernel's double reference within the CPU kernel's own bounds (ops_loss_embedding_test
// .cpp); each op run twice from the same inputs must give the same bytes. Every test runs once
// without and once with the Khronos validation layer, which must report nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/loss/cross_entropy.h"
#include "tinylm/kernels/vulkan/devices.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/loss.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

class GpuLoss : public GpuTest {};

constexpr float kLossScale = 0.37f;

// The CPU case's inputs (ops_loss_embedding_test.cpp): h = 1, logits uniform in [-30, 30] (far
// below the maximum included), else normal with scale 8; targets the first, the last and a
// middle class.
struct LossInputs {
  Floats logits;
  Ints targets;
};
LossInputs loss_inputs(const Shape& s) {
  LossInputs in{s.h ? test::random_uniform(s.rows * s.n, 2, -30.0f, 30.0f)
                    : normal_floats(s.rows * s.n, 27, 8.0),
                Ints(s.rows)};
  for (int64_t r = 0; r < s.rows; ++r)
    in.targets[r] = static_cast<int32_t>(r % 3 == 0 ? 0 : r % 3 == 1 ? s.n - 1 : s.n / 2);
  return in;
}

// The CPU case's shapes (V past one workgroup's 256-wide stride among them), a batch of many
// short rows, and one row of GPT-2's vocabulary.
TEST_P(GpuLoss, CrossEntropyMatchesTheReferenceWithTheSameBitsEachRun) {
  const Shape shapes[] = {{1, 1},   {3, 7},    {3, 16},         {2, 17}, {3, 23},
                          {2, 130}, {3, 1037}, {2, 1000, 1, 1}, {70, 5}, {1, 50257, 1, 1}};
  for (const Shape& s : shapes) {
    const int64_t rows = s.rows, V = s.n;
    const size_t n = static_cast<size_t>(rows * V), r = static_cast<size_t>(rows);
    const std::string where = describe(s) + (s.h ? " uniform" : "");
    const LossInputs in = loss_inputs(s);
    const Buffer logits = upload(in.logits), targets = upload_values(in.targets);

    // Twice from the same inputs, and the backward in place over a copy of the logits.
    Floats outs[2][4];
    for (Floats(&o)[4] : outs) {
      Buffer losses = zeros(r), lse = zeros(r), g = zeros(n), g_in_place = upload(in.logits);
      vulkan::cross_entropy_forward(*context_, losses, lse, logits, targets, rows, V);
      vulkan::cross_entropy_backward(*context_, g, logits, lse, targets, rows, V, kLossScale);
      vulkan::cross_entropy_backward(*context_, g_in_place, g_in_place, lse, targets, rows, V,
                                     kLossScale);
      o[0] = vulkan::download_floats(losses, r);
      o[1] = vulkan::download_floats(lse, r);
      o[2] = vulkan::download_floats(g, n);
      o[3] = vulkan::download_floats(g_in_place, n);
      if (&o == &outs[0]) {
        double total = 0;
        for (const float loss : o[0]) total += loss;
        EXPECT_EQ(vulkan::sum_losses(losses, rows), total) << where;
      }
    }
    const char* names[] = {"losses", "lse", "dlogits", "dlogits in place"};
    for (int i = 0; i < 4; ++i)
      expect_same_bytes(where + " " + names[i] + " twice", outs[0][i], outs[1][i]);
    expect_same_bytes(where + " dlogits in place", outs[0][2], outs[0][3]);

    const Vec l = widen_all(in.logits);
    Vec losses(r), lse(r), g(n);
    const double total = kernels::cross_entropy_forward(losses.data(), lse.data(), l.data(),
                                                        in.targets.data(), rows, V);
    kernels::cross_entropy_backward(g.data(), l.data(), lse.data(), in.targets.data(), rows, V,
                                    static_cast<double>(kLossScale));
    // cross_entropy_f32's bounds (ops_loss_embedding_test.cpp): exp within ~2e-7 there, the
    // device's within Vulkan's 3 + 2|x| ulp here; differences to the maximum rounded in float.
    // The target's p - 1 cancels where p is near 1 (many of the 70 x 5 rows; none of the CPU
    // case's): there, 4 ulp of lse in l - lse, times scale (the CPU kernel's float error too).
    const double gmax = max_abs(g);
    Vec bound(n);
    for (size_t i = 0; i < n; ++i) bound[i] = std::min(1e-6 * gmax, 1e-5 * std::abs(g[i]) + 1e-37);
    for (int64_t row = 0; row < rows; ++row)
      bound[row * V + in.targets[row]] += 4 * kF32 * kLossScale * std::max(1.0, std::abs(lse[row]));
    {  // The CPU float kernel is within the same bounds.
      Floats fl(r), fg(n);
      kernels::cross_entropy_forward(nullptr, fl.data(), in.logits.data(), in.targets.data(), rows,
                                     V);
      kernels::cross_entropy_backward(fg.data(), in.logits.data(), fl.data(), in.targets.data(),
                                      rows, V, kLossScale);
      expect_within(where + " CPU", fg, bounded("dlogits", g, bound));
    }
    double got_total = 0;
    for (const float loss : outs[0][0]) got_total += loss;
    expect_within(where, {static_cast<float>(got_total)}, near("total", {total}, 1e-5, 1e-6));
    expect_within(where, outs[0][0], near("losses", losses, 1e-5, 1e-6));
    expect_within(where, outs[0][1], near("lse", lse, 1e-6, 1e-6));
    expect_within(where, outs[0][2], bounded("dlogits", g, bound));
  }
}

TEST_P(GpuLoss, CrossEntropyChecksItsSizes) {
  const Buffer logits = upload(normal_floats(21, 5)), targets = upload_values(Ints{0, 1, 2});
  Buffer losses = zeros(3), lse = zeros(3), small = zeros(2);
  test::expect_error(
      [&] { vulkan::cross_entropy_forward(*context_, losses, lse, logits, targets, 3, 8); },
      {"vulkan cross_entropy_forward: logits holds 21 floats, needs 24"});
  test::expect_error(
      [&] { vulkan::cross_entropy_forward(*context_, small, lse, logits, targets, 3, 7); },
      {"vulkan cross_entropy_forward: losses holds 2 floats, needs 3"});
  test::expect_error(
      [&] { vulkan::cross_entropy_forward(*context_, losses, lse, logits, targets, 4, 5); },
      {"vulkan cross_entropy_forward: targets holds 3 ints, needs 4"});
  test::expect_error(
      [&] { vulkan::cross_entropy_forward(*context_, losses, lse, logits, targets, 3, 0); },
      {"vulkan cross_entropy_forward: V = 0 with 3 rows"});
  test::expect_error(
      [&] { vulkan::cross_entropy_backward(*context_, small, logits, lse, targets, 3, 7, 1.0f); },
      {"vulkan cross_entropy_backward: dlogits holds 2 floats, needs 21"});
  test::expect_error(
      [&] { vulkan::cross_entropy_backward(*context_, losses, logits, lse, targets, -1, 7, 1.0f); },
      {"vulkan cross_entropy_backward: rows = -1 is out of range"});
  // No rows is nothing to do.
  vulkan::cross_entropy_forward(*context_, losses, lse, logits, targets, 0, 7);
  EXPECT_EQ(vulkan::sum_losses(losses, 0), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuLoss, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
