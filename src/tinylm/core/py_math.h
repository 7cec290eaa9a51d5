#pragma once
// Python's float arithmetic, reproduced exactly. CPython evaluates `x ** y` with the C
// library's pow(), which for glibc is within 0.52 ulp but not always correctly rounded
// (about 1 input in 1200 differs from x*x or sqrt(x) in the last bit). Compilers, assuming
// pow is exact, rewrite pow(x, 2.0) as x*x, so a literal exponent is hidden from them here.
#include <bit>
#include <cmath>
#include <cstdint>

namespace tinylm {

// x ** y as CPython computes it: the C library's pow, never rewritten by the compiler.
inline double py_pow(double x, double y) {
  volatile double opaque_y = y;
  return std::pow(x, opaque_y);
}

inline float py_pow(float x, float y) {
  volatile float opaque_y = y;
  return std::pow(x, opaque_y);
}

namespace detail {
// ulp of a positive normal double whose exponent is large enough that ulp is normal.
inline double ulp_of(double v) {
  return std::bit_cast<double>((std::bit_cast<uint64_t>(v) & 0x7ff0000000000000ull) -
                               (52ull << 52));
}
// True when |v| lies in [2^-limit, 2^limit) (so it is finite, normal and non-zero).
inline bool exponent_within(double v, int limit) {
  const int e = static_cast<int>((std::bit_cast<uint64_t>(v) >> 52) & 0x7ff) - 1023;
  return static_cast<int>(e >= -limit) & static_cast<int>(e < limit);
}
// glibc's pow (since 2.28) computes exp(y log x) with exp within 0.509 ulp and log within a
// relative 1.3 * 2^-68, then rounds once: before that rounding its value is within
// 0.009 + |y log x| * 1.3 * 2^-15 ulp of the exact result. With |y log x| <= 64 that is under
// 0.012 ulp, so whenever the exact value is more than 0.02 ulp from a rounding midpoint (the
// representable value is closer than 0.48 ulp), pow returns the correctly rounded result.
// The fast paths below check both conditions and otherwise call pow.
constexpr double kSafeUlps = 0.48;
// Exponent ranges that keep |y log x| <= 64 for y = 2, 0.5 and -1.
constexpr int kSquareExponentLimit = 46;
constexpr int kSqrtExponentLimit = 184;
constexpr int kReciprocalExponentLimit = 92;
}  // namespace detail

// x ** 2 (CPython), fast: the correctly rounded x*x unless the exact square sits near a
// rounding midpoint, where pow itself is called.
inline double py_square(double x) {
  const double hi = x * x;
  if (detail::exponent_within(x, detail::kSquareExponentLimit)) {
    const double lo = std::fma(x, x, -hi);  // exact: x*x == hi + lo
    if (std::fabs(lo) < detail::kSafeUlps * detail::ulp_of(hi)) return hi;
  }
  return py_pow(x, 2.0);
}

// x ** 0.5 (CPython), fast: the correctly rounded sqrt unless the exact root sits near a
// rounding midpoint, where pow itself is called.
inline double py_sqrt(double x) {
  const double s = std::sqrt(x);
  if (x > 0.0 && detail::exponent_within(x, detail::kSqrtExponentLimit)) {
    const double r = std::fma(-s, s, x);  // exact: x - s*s; the root is s + r / (2s) + ...
    if (std::fabs(r) < 2.0 * detail::kSafeUlps * detail::ulp_of(s) * s) return s;
  }
  return py_pow(x, 0.5);
}

// x / d, correctly rounded (bit-identical to the division), from y = 1 / d computed once:
// q = x*y is within one ulp, r = x - d*q is exact with an FMA, and q + r*y rounds to the
// correct quotient (Markstein's theorem). The theorem needs x, d and the quotient well
// inside the normal range; callers pass `safe` = divides_by_reciprocal_safely(x) and fall
// back to a real division otherwise.
inline double div_by_reciprocal(double x, double d, double y) {
  const double q = x * y;
  const double r = std::fma(-d, q, x);
  return std::fma(r, y, q);
}
// True when div_by_reciprocal is exact for this numerator, given a divisor in [2^-20, 2^20].
inline bool divides_by_reciprocal_safely(double x) {
  const double ax = std::fabs(x);
  return static_cast<int>(ax > 0x1p-900) & static_cast<int>(ax < 0x1p900);
}

// x ** -1 (CPython), fast: the correctly rounded 1/x unless the exact reciprocal sits near a
// rounding midpoint, where pow itself is called.
inline double py_reciprocal(double x) {
  const double q = 1.0 / x;
  if (detail::exponent_within(x, detail::kReciprocalExponentLimit)) {
    const double r = std::fma(-q, x, 1.0);  // exact: 1 - q*x; the reciprocal is q + r / x
    if (std::fabs(r) < detail::kSafeUlps * detail::ulp_of(q) * std::fabs(x)) return q;
  }
  return py_pow(x, -1.0);
}
inline float py_reciprocal(float x) { return py_pow(x, -1.0f); }

}  // namespace tinylm
