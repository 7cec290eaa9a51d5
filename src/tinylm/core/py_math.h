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
inline bool ulp_is_normal(double v) {  // finite, and |v| >= 2^-969
  const uint64_t e = (std::bit_cast<uint64_t>(v) >> 52) & 0x7ff;
  return static_cast<int>(e > 53) & static_cast<int>(e < 0x7ff);
}
// glibc's pow rounds its result from an approximation within 0.02 ulp of the exact value,
// so whenever the exact value is further than that from a rounding midpoint, pow returns
// the correctly rounded result. 0.48 ulp from the representable value leaves that margin.
constexpr double kSafeUlps = 0.48;
}  // namespace detail

// x ** 2 (CPython), fast: the correctly rounded x*x unless the exact square sits near a
// rounding midpoint, where pow itself is called.
inline double py_square(double x) {
  const double hi = x * x;
  if (detail::ulp_is_normal(hi)) {
    const double lo = std::fma(x, x, -hi);  // exact: x*x == hi + lo
    if (std::fabs(lo) < detail::kSafeUlps * detail::ulp_of(hi)) return hi;
  }
  return py_pow(x, 2.0);
}

// x ** 0.5 (CPython), fast: the correctly rounded sqrt unless the exact root sits near a
// rounding midpoint, where pow itself is called.
inline double py_sqrt(double x) {
  const double s = std::sqrt(x);
  if (x > 0.0 && detail::ulp_is_normal(s) && detail::ulp_is_normal(x)) {
    const double r = std::fma(-s, s, x);  // exact: x - s*s; the root is s + r / (2s) + ...
    if (std::fabs(r) < 2.0 * detail::kSafeUlps * detail::ulp_of(s) * s) return s;
  }
  return py_pow(x, 0.5);
}

// x ** -1 (CPython), fast: the correctly rounded 1/x unless the exact reciprocal sits near a
// rounding midpoint, where pow itself is called.
inline double py_reciprocal(double x) {
  const double q = 1.0 / x;
  if (detail::ulp_is_normal(q) && detail::ulp_is_normal(x)) {
    const double r = std::fma(-q, x, 1.0);  // exact: 1 - q*x; the reciprocal is q + r / x
    if (std::fabs(r) < detail::kSafeUlps * detail::ulp_of(q) * std::fabs(x)) return q;
  }
  return py_pow(x, -1.0);
}
inline float py_reciprocal(float x) { return py_pow(x, -1.0f); }

}  // namespace tinylm
