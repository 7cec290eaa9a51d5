// The sampler's inputs on the device (kernels/vulkan/sample.h) on device 0 (lavapipe in CI):
// argmax_rows gives kernels::argmax's index (ties, signed zeros, NaN and infinities included),
// softmax_temperature the double softmax of logits / temperature within the CPU softmax's
// bounds (cross_entropy_inplace_f32's probabilities, ops_loss_embedding_test.cpp). Each op runs
// twice from the same inputs and must give the same bytes. Every test runs once without and once
// with the Khronos validation layer, which must report nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "ops_table.h"
#include "test_util.h"
#include "tinylm/kernels/reduce/argmax.h"
#include "tinylm/kernels/vulkan/devices.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/sample.h"
#endif

namespace tinylm::kernels::ops_table {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

class GpuSample : public GpuTest {};

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// 1 row, V = 1, V past one workgroup's 256-wide stride, many short rows, GPT-2's vocabulary.
const Shape kShapes[] = {{1, 1}, {3, 7}, {2, 257}, {3, 1037}, {70, 5}, {1, 50257}};

// Whole numbers from a normal of scale 3: many ties, each row's largest value repeated in
// several of the shader's 256 strided lanes.
Floats tied_logits(const Shape& s) {
  Floats l = normal_floats(s.rows * s.n, 31, 3.0);
  for (float& v : l) v = std::round(v);
  return l;
}

// argmax_rows against kernels::argmax row by row, twice.
void check_argmax(Context& context, const std::string& where, const Floats& l, int64_t rows,
                  int64_t V) {
  Ints want(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    want[r] = static_cast<int32_t>(kernels::argmax(l.data() + r * V, V));
  const Buffer lb = vulkan::upload_floats(context, l);
  for (int run = 0; run < 2; ++run) {
    Buffer best(context, want.size() * sizeof(int32_t));
    vulkan::argmax_rows(context, best, lb, rows, V);
    EXPECT_EQ(download_values<int32_t>(best, want.size()), want) << where << " run " << run;
  }
}

TEST_P(GpuSample, ArgmaxGivesTheCpuIndex) {
  for (const Shape& s : kShapes) check_argmax(*context_, describe(s), tied_logits(s), s.rows, s.n);
  // Rows of 300 (two lanes' strides): the largest value last and first; equal in lanes 3 and
  // 259 (the lower wins though its lane is later in the tree); -0 before +0 and +0 before -0;
  // NaN first (0), NaN elsewhere (never chosen), all NaN but the last; all -inf; +inf twice.
  constexpr int64_t V = 300;
  std::vector<Floats> rows;
  const auto row = [&](auto&& fill) {
    Floats r(V, -1.0f);
    fill(r);
    rows.push_back(r);
  };
  row([](Floats& r) { r[V - 1] = 5; });
  row([](Floats& r) { r[0] = 5; });
  row([](Floats& r) { r[259] = 5, r[3] = 5; });
  row([](Floats& r) { std::fill(r.begin(), r.end(), -2.0f), r[7] = -0.0f, r[263] = 0.0f; });
  row([](Floats& r) { std::fill(r.begin(), r.end(), -2.0f), r[7] = 0.0f, r[263] = -0.0f; });
  row([](Floats& r) { r[0] = kNaN, r[10] = 5; });
  row([](Floats& r) { r[10] = kNaN, r[20] = kNaN, r[266] = 3; });
  row([](Floats& r) { std::fill(r.begin(), r.end() - 1, kNaN); });
  row([](Floats& r) { std::fill(r.begin(), r.end(), -kInf); });
  row([](Floats& r) { r[299] = kInf, r[44] = kInf; });
  Floats all;
  for (const Floats& r : rows) all.insert(all.end(), r.begin(), r.end());
  check_argmax(*context_, "special rows", all, static_cast<int64_t>(rows.size()), V);
}

TEST_P(GpuSample, SoftmaxTemperatureMatchesTheReferenceWithTheSameBitsEachRun) {
  for (const Shape& s : kShapes) {
    for (const float temperature : {1.0f, 0.7f, 1.6f}) {
      const int64_t rows = s.rows, V = s.n;
      const size_t n = static_cast<size_t>(rows * V);
      const std::string where = describe(s) + " T=" + fmt(temperature);
      Floats l = normal_floats(n, 32, 4.0);
      if (V > 10) l[3] = kNaN;  // weighs 0
      const Buffer lb = upload(l);
      Floats got[3];
      for (Floats& g : got) {
        Buffer probs = zeros(n);
        vulkan::softmax_temperature(*context_, probs, lb, rows, V, temperature);
        g = vulkan::download_floats(probs, n);
      }
      Buffer in_place = upload(l);
      vulkan::softmax_temperature(*context_, in_place, in_place, rows, V, temperature);
      expect_same_bytes(where + " twice", got[0], got[1]);
      expect_same_bytes(where + " in place", got[0], vulkan::download_floats(in_place, n));

      // The sampler's weights exp((l - max) / T) in double (NaN: 0), normalised.
      Vec p(n);
      for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY, total = 0;
        for (int64_t j = 0; j < V; ++j)
          mx = std::max<double>(mx, std::isnan(l[r * V + j]) ? mx : l[r * V + j]);
        for (int64_t j = 0; j < V; ++j) {
          const double x = l[r * V + j];
          p[r * V + j] = std::isnan(x) ? 0 : std::exp((x - mx) / temperature);
          total += p[r * V + j];
        }
        for (int64_t j = 0; j < V; ++j) p[r * V + j] /= total;
      }
      // cross_entropy_inplace_f32's probabilities' bounds: the device's exp (Vulkan: 3 + 2|x|
      // ulp) and division (2.5 ulp) stay within them.
      const double pmax = max_abs(p);
      Vec bound(n);
      for (size_t i = 0; i < n; ++i) bound[i] = std::min(1e-6 * pmax, 1e-5 * p[i] + 1e-37);
      expect_within(where, got[0], bounded("probs", p, bound));
    }
  }
}

TEST_P(GpuSample, OpsCheckTheirSizes) {
  const Buffer logits = upload(normal_floats(21, 5));
  Buffer best(*context_, 2 * sizeof(int32_t)), probs = zeros(21), small = zeros(20);
  test::expect_error([&] { vulkan::argmax_rows(*context_, best, logits, 3, 7); },
                     {"vulkan argmax_rows: best holds 2 ints, needs 3"});
  test::expect_error([&] { vulkan::argmax_rows(*context_, best, logits, 2, 11); },
                     {"vulkan argmax_rows: logits holds 21 floats, needs 22"});
  test::expect_error([&] { vulkan::argmax_rows(*context_, best, logits, 2, 0); },
                     {"vulkan argmax_rows: V = 0 with 2 rows"});
  test::expect_error([&] { vulkan::softmax_temperature(*context_, small, logits, 3, 7, 1.0f); },
                     {"vulkan softmax_temperature: probs holds 20 floats, needs 21"});
  test::expect_error([&] { vulkan::softmax_temperature(*context_, probs, logits, 3, 7, 0.0f); },
                     {"vulkan softmax_temperature: temperature = 0 must be > 0"});
  // No rows is nothing to do.
  vulkan::argmax_rows(*context_, best, logits, 0, 7);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuSample, ::testing::Values(Validation::off, Validation::on),
                         validation_name);

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels::ops_table
