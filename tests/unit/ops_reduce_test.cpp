// reduce/argmax against std::max_element (the index greedy decoding took before), at every level.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"
#include "tinylm/kernels/reduce/argmax.h"

namespace tinylm {
using test::expect_error;
using test::for_each_isa;
namespace TINYLM_TEST_LOCAL {

int64_t expected(const std::vector<float>& x) {
  return std::max_element(x.begin(), x.end()) - x.begin();
}

void expect_as_max_element(const std::vector<float>& x, const char* what) {
  for_each_isa([&](kernels::Isa) {
    EXPECT_EQ(kernels::argmax(x.data(), static_cast<int64_t>(x.size())), expected(x))
        << what << ", n = " << x.size();
  });
}

TEST(OpsArgmax, EqualsMaxElementOnRandomRows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  // Every tail of a vector and of a 1024-element block, and a GPT-2 row of logits.
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 40; ++n) sizes.push_back(n);
  for (const int64_t n : {1023, 1024, 1025, 2047, 2048, 2049, 50257}) sizes.push_back(n);
  for (const int64_t n : sizes) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    expect_as_max_element(x, "normal values");
    // Values drawn from a few, so the largest is tied, often across blocks.
    for (float& v : x) v = static_cast<float>(rng() % 5);
    expect_as_max_element(x, "ties");
  }
}

TEST(OpsArgmax, TiesNegativeRowsZerosInfinitiesAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto row = [](int64_t n, float fill) { return std::vector<float>(n, fill); };

  std::vector<float> x = row(3000, -5.0f);  // all negative: the tail must not read as 0
  x[2999] = -1.0f;
  expect_as_max_element(x, "negative, largest last");
  expect_as_max_element(row(3000, -2.0f), "all equal");

  x = row(2500, 0.0f);  // -0 and +0 compare equal: the first is kept
  x[1500] = -0.0f;
  x[0] = -0.0f;
  expect_as_max_element(x, "signed zeros");
  EXPECT_EQ(kernels::argmax(x.data(), 2500), 0);

  x = row(2100, 1.0f);
  x[1700] = inf;
  x[2050] = inf;
  expect_as_max_element(x, "infinities");
  x = row(17, -inf);
  expect_as_max_element(x, "all -inf");

  // NaN is never the answer, unless it is the first element (max_element compares against it).
  x = row(2100, 1.0f);
  x[5] = nan;
  x[1100] = nan;
  x[1500] = 2.0f;
  expect_as_max_element(x, "NaN inside");
  EXPECT_EQ(kernels::argmax(x.data(), 2100), 1500);
  x[0] = nan;
  expect_as_max_element(x, "NaN first");
  EXPECT_EQ(kernels::argmax(x.data(), 2100), 0);
  x = row(20, nan);
  expect_as_max_element(x, "all NaN");
  x = row(20, nan);
  x[19] = -inf;
  expect_as_max_element(x, "NaN then -inf");
}

TEST(OpsArgmax, RefusesAnEmptyArray) {
  const float x = 0;
  expect_error([&] { kernels::argmax(&x, 0); }, {"argmax", "empty"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
