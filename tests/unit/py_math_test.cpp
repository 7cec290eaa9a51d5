// The fast paths of py_square / py_sqrt / py_reciprocal must return exactly what the C library's
// pow (CPython's x ** 2 and x ** 0.5) returns, including the ~1 in 1200 inputs where pow is not
// correctly rounded.
#include "tinylm/core/py_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

bool same(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

TEST(PyMath, SquareAndSqrtEqualLibraryPowOnMillionsOfInputs) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  int pow_not_exact = 0;
  for (int i = 0; i < 4'000'000; ++i) {
    const double x = unit(rng) * std::exp2(std::floor(unit(rng) * 60));
    const double sq = py_pow(x, 2.0);
    ASSERT_TRUE(same(py_square(x), sq)) << "x = " << x;
    const double ax = std::fabs(x);
    ASSERT_TRUE(same(py_sqrt(ax), py_pow(ax, 0.5))) << "x = " << ax;
    ASSERT_TRUE(same(py_reciprocal(x), py_pow(x, -1.0))) << "x = " << x;
    if (sq != x * x) ++pow_not_exact;
  }
  // The premise of py_math.h: pow really does differ from x*x sometimes.
  EXPECT_GT(pow_not_exact, 0);
}

// Adam divides by its bias corrections 1 - beta^t through a reciprocal; the quotient must be
// the division's, bit for bit, for every numerator the predicate admits.
TEST(PyMath, DivisionByReciprocalEqualsDivision) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int checked = 0;
  for (int k = 0; k < 3'000'000; ++k) {
    double d = 0.01 + 0.99 * unit(rng);
    if (k % 3 == 0) d = 1 - py_pow(0.85, 1 + (k / 3) % 3000);
    if (k % 5 == 0) d = 1 - py_pow(0.99, 1 + (k / 5) % 3000);
    const double x = (unit(rng) - 0.5) * std::exp2(std::floor(unit(rng) * 1800 - 900));
    if (!divides_by_reciprocal_safely(x)) continue;
    ASSERT_TRUE(same(div_by_reciprocal(x, d, 1.0 / d), x / d)) << x << " / " << d;
    ++checked;
  }
  EXPECT_GT(checked, 2'500'000);
  EXPECT_FALSE(divides_by_reciprocal_safely(0.0));
  EXPECT_FALSE(divides_by_reciprocal_safely(1e-300));
}

TEST(PyMath, EdgeCasesEqualLibraryPow) {
  const double inf = std::numeric_limits<double>::infinity();
  const double cases[] = {0.0,
                          -0.0,
                          1.0,
                          -1.0,
                          1e-300,
                          1e-160,
                          1e-155,
                          1e154,
                          1e155,
                          1e300,
                          inf,
                          -inf,
                          std::numeric_limits<double>::denorm_min(),
                          std::numeric_limits<double>::min(),
                          std::numeric_limits<double>::max(),
                          std::numeric_limits<double>::quiet_NaN()};
  for (double x : cases) {
    EXPECT_TRUE(same(py_square(x), py_pow(x, 2.0))) << x;
    EXPECT_TRUE(same(py_reciprocal(x), py_pow(x, -1.0))) << x;
    if (!(x < 0)) {
      EXPECT_TRUE(same(py_sqrt(x), py_pow(x, 0.5))) << x;
    }
  }
  EXPECT_TRUE(std::isnan(py_sqrt(-4.0)));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
