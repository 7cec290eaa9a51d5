// Half-precision conversions checked against independent references: the x86 F16C converter
// (vcvtph2ps / vcvtps2ph) for f16, and a double-arithmetic rounding model for bf16; and the
// kernels' bulk conversions against the scalar ones at every level.
#include <gtest/gtest.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cast/cast.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

// ---------------------------------------------------------------------------------------------
// References.

#if defined(__x86_64__)
// Compiled for F16C regardless of -march, called only after a runtime CPU check.
__attribute__((target("f16c"))) float hw_f16_to_float(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_float_to_f16(float f) {
  // Not _cvtss_sh: clang's macro for it is a C99 compound literal (-Wpedantic).
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

// F16C comes with every CPU the AVX2 kernel level runs on.
bool have_f16c() { return kernels::supported_isas().back() >= kernels::Isa::avx2; }
#else
float hw_f16_to_float(uint16_t) { return 0; }
uint16_t hw_float_to_f16(float) { return 0; }
bool have_f16c() { return false; }
#endif

#define REQUIRE_F16C()                                             \
  do {                                                             \
    if (!have_f16c()) GTEST_SKIP() << "CPU has no F16C converter"; \
  } while (0)

bool f16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
bool bf16_is_nan(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x007fu) != 0; }

// float -> bf16, round to nearest, ties to even, computed from the two truncation neighbours
// and distances in double (exact: both neighbours and x have at most 24 significant bits).
uint16_t ref_float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>(u >> 16) & 0x8000u;
  const uint32_t mag = u & 0x7fffffffu;
  const uint16_t lo = static_cast<uint16_t>(mag >> 16);               // truncation toward zero
  if ((mag & 0xffffu) == 0) return static_cast<uint16_t>(sign | lo);  // exact (incl. 0, inf)
  const uint16_t hi = static_cast<uint16_t>(lo + 1);                  // next magnitude up
  const double x = std::fabs(static_cast<double>(f));
  const double lo_val = static_cast<double>(bits_float(static_cast<uint32_t>(lo) << 16));
  // One step above the largest finite bf16 is where the exponent range runs out: 2^128 with
  // unbounded exponent, which IEEE rounding uses to decide overflow to infinity.
  const double hi_val = hi == 0x7f80u
                            ? std::ldexp(1.0, 128)
                            : static_cast<double>(bits_float(static_cast<uint32_t>(hi) << 16));
  const double d_lo = x - lo_val, d_hi = hi_val - x;
  uint16_t r;
  if (d_lo < d_hi)
    r = lo;
  else if (d_hi < d_lo)
    r = hi;
  else
    r = (lo & 1u) == 0 ? lo : hi;
  return static_cast<uint16_t>(sign | r);
}

::testing::AssertionResult f16_matches_hw(float x) {
  const uint16_t got = float_to_f16(x);
  const uint16_t want = hw_float_to_f16(x);
  if (std::isnan(x)) {
    if (f16_is_nan(got)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "float bits 0x" << std::hex << float_bits(x) << " is NaN but f16 is 0x" << got;
  }
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "float bits 0x" << std::hex << float_bits(x) << " (" << x
                                       << "): got 0x" << got << ", F16C gives 0x" << want;
}

// ---------------------------------------------------------------------------------------------
// f16 -> f32

TEST(DTypeF16, ToFloatMatchesF16cForAllBitPatterns) {
  REQUIRE_F16C();
  int nans = 0, failures = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float got = f16_to_float(static_cast<uint16_t>(h));
    const float want = hw_f16_to_float(static_cast<uint16_t>(h));
    nans += std::isnan(want);
    // Every bit, NaNs included: a signaling NaN comes out quiet with its payload, as F16C does.
    if (float_bits(got) != float_bits(want) && ++failures <= 10) {
      ADD_FAILURE() << "half 0x" << std::hex << h << ": got bits 0x" << float_bits(got)
                    << ", F16C gives 0x" << float_bits(want);
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
  EXPECT_EQ(failures, 0);
}

TEST(DTypeF16, ToFloatKnownValues) {
  // Values from the IEEE 754 binary16 definition.
  EXPECT_EQ(f16_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(f16_to_float(0x8000)));
  EXPECT_EQ(f16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_float(0xc000), -2.0f);
  EXPECT_EQ(f16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));         // smallest subnormal
  EXPECT_EQ(f16_to_float(0x03ff), 1023 * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(f16_to_float(0x0400), std::ldexp(1.0f, -14));         // smallest normal
  EXPECT_EQ(f16_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(f16_to_float(0x7c01)));
}

// ---------------------------------------------------------------------------------------------
// f32 -> f16

TEST(DTypeF16, FromFloatMatchesF16cOnSpreadBitPatterns) {
  REQUIRE_F16C();
  // bits = k * 4099 mod 2^32: 4099 is odd, so these are 4M distinct patterns that sweep every
  // exponent (both signs, NaNs and infinities included) about four times.
  int failures = 0;
  for (uint32_t k = 0; k < 4'000'000u; ++k) {
    const float x = bits_float(k * 4099u);
    const auto r = f16_matches_hw(x);
    if (!r && ++failures <= 10) ADD_FAILURE() << r.message();
  }
  EXPECT_EQ(failures, 0);
}

TEST(DTypeF16, FromFloatTiesToEvenAtEveryHalfway) {
  REQUIRE_F16C();
  // The exact midpoint between each pair of adjacent finite halves (representable in float:
  // 12 significant bits), and its float neighbours on either side.
  int failures = 0;
  for (uint32_t h = 0; h < 0x7bffu; ++h) {
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const float a = hw_f16_to_float(static_cast<uint16_t>(sign | h));
      const float b = hw_f16_to_float(static_cast<uint16_t>(sign | (h + 1)));
      const float mid = static_cast<float>((static_cast<double>(a) + b) / 2.0);
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(a) + b) / 2.0);
      const uint16_t even = static_cast<uint16_t>(sign | ((h & 1u) ? h + 1 : h));
      if (float_to_f16(mid) != even && ++failures <= 10) {
        ADD_FAILURE() << "midpoint of halves 0x" << std::hex << (sign | h) << " and 0x"
                      << (sign | (h + 1)) << ": got 0x" << float_to_f16(mid) << ", want 0x" << even;
      }
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2.0f * mid)}) {
        const auto r = f16_matches_hw(x);
        if (!r && ++failures <= 10) ADD_FAILURE() << r.message();
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(DTypeF16, FromFloatBoundaries) {
  REQUIRE_F16C();
  const float inf = std::numeric_limits<float>::infinity();
  const float sub = std::ldexp(1.0f, -24);  // smallest subnormal half
  const std::vector<float> xs = {0.0f,
                                 -0.0f,
                                 1.0f,
                                 -1.0f,
                                 65504.0f,
                                 -65504.0f,
                                 65519.99f,
                                 65520.0f,
                                 -65520.0f,
                                 std::nextafter(65520.0f, 0.0f),
                                 65536.0f,
                                 1e10f,
                                 inf,
                                 -inf,
                                 std::numeric_limits<float>::max(),
                                 std::numeric_limits<float>::denorm_min(),
                                 std::numeric_limits<float>::min(),
                                 sub,
                                 sub / 2,
                                 std::nextafter(sub / 2, 1.0f),
                                 std::nextafter(sub / 2, 0.0f),
                                 sub / 4,
                                 1.5f * sub,
                                 2.5f * sub,
                                 3.5f * sub,
                                 1023 * sub,
                                 1023.5f * sub,
                                 std::nextafter(1023.5f * sub, 0.0f),
                                 std::ldexp(1.0f, -14),
                                 std::nextafter(std::ldexp(1.0f, -14), 0.0f),
                                 std::nextafter(std::ldexp(1.0f, -14), 1.0f),
                                 -sub / 2,
                                 -1.5f * sub,
                                 std::ldexp(1.0f, -25),
                                 std::ldexp(1.0f, -26),
                                 std::ldexp(1.0f, -30)};
  for (float x : xs) EXPECT_TRUE(f16_matches_hw(x));

  // Hand-derived expectations (binary16: bias 15, 10 mantissa bits, max 65504).
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65519.99f), 0x7bff);  // just below the overflow midpoint
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);   // the midpoint to 2^16 rounds to even: inf
  EXPECT_EQ(float_to_f16(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_f16(inf), 0x7c00);
  EXPECT_EQ(float_to_f16(-inf), 0xfc00);
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16(sub), 0x0001);
  EXPECT_EQ(float_to_f16(sub / 2), 0x0000);  // tie between 0 and 1: even is 0
  EXPECT_EQ(float_to_f16(std::nextafter(sub / 2, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_f16(-sub / 2), 0x8000);
  EXPECT_EQ(float_to_f16(1.5f * sub), 0x0002);     // tie between 1 and 2
  EXPECT_EQ(float_to_f16(2.5f * sub), 0x0002);     // tie between 2 and 3
  EXPECT_EQ(float_to_f16(1023.5f * sub), 0x0400);  // tie between largest subnormal and min normal
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: 1.0 is even
  EXPECT_EQ(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: up to even
}

TEST(DTypeF16, FromFloatNaNStaysNaN) {
  const uint32_t patterns[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7f802000u,
                               0x7fbfffffu, 0x7fffffffu, 0x7f801fffu, 0xffffe000u};
  for (uint32_t p : patterns) {
    const uint16_t h = float_to_f16(bits_float(p));
    EXPECT_TRUE(f16_is_nan(h)) << std::hex << "float 0x" << p << " -> half 0x" << h;
    EXPECT_EQ(h & 0x8000u, (p >> 16) & 0x8000u) << std::hex << "sign of 0x" << p;
  }
  EXPECT_TRUE(f16_is_nan(float_to_f16(std::numeric_limits<float>::quiet_NaN())));
}

TEST(DTypeF16, RoundTripsEveryHalf) {
  int failures = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    if (f16_is_nan(static_cast<uint16_t>(h))) continue;
    const uint16_t back = float_to_f16(f16_to_float(static_cast<uint16_t>(h)));
    if (back != h && ++failures <= 10)
      ADD_FAILURE() << std::hex << "half 0x" << h << " -> 0x" << back;
  }
  EXPECT_EQ(failures, 0);
}

// ---------------------------------------------------------------------------------------------
// bf16

TEST(DTypeBF16, ReferenceModelSanity) {
  // The reference itself, on hand-derived cases, so a broken reference cannot hide a bug.
  EXPECT_EQ(ref_float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(ref_float_to_bf16(bits_float(0x3f808000u)), 0x3f80);  // tie, 0x3f80 even
  EXPECT_EQ(ref_float_to_bf16(bits_float(0x3f818000u)), 0x3f82);  // tie, up to even
  EXPECT_EQ(ref_float_to_bf16(bits_float(0x3f808001u)), 0x3f81);
  EXPECT_EQ(ref_float_to_bf16(bits_float(0x7f7f8000u)), 0x7f80);  // overflow tie -> inf
  EXPECT_EQ(ref_float_to_bf16(bits_float(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(ref_float_to_bf16(bits_float(0x80018000u)), 0x8002);
}

TEST(DTypeBF16, FromFloatMatchesReferenceOnSpreadBitPatterns) {
  int failures = 0;
  for (uint32_t k = 0; k < 4'000'000u; ++k) {
    const uint32_t bits = k * 4099u;
    const float x = bits_float(bits);
    const uint16_t got = float_to_bf16(x);
    if (std::isnan(x)) {
      if ((!bf16_is_nan(got) || (got & 0x0040u) == 0 ||
           (got & 0x8000u) != ((bits >> 16) & 0x8000u)) &&
          ++failures <= 10)
        ADD_FAILURE() << std::hex << "NaN 0x" << bits << " -> 0x" << got;
      continue;
    }
    const uint16_t want = ref_float_to_bf16(x);
    if (got != want && ++failures <= 10)
      ADD_FAILURE() << std::hex << "float 0x" << bits << ": got 0x" << got << ", want 0x" << want;
  }
  EXPECT_EQ(failures, 0);
}

TEST(DTypeBF16, FromFloatExactTiesAndNeighbours) {
  int failures = 0;
  for (uint32_t top = 0; top <= 0xffffu; ++top) {
    if ((top & 0x7f80u) == 0x7f80u) continue;  // inf/NaN exponent
    const uint32_t tie = (top << 16) | 0x8000u;
    const uint16_t even = static_cast<uint16_t>((top & 1u) ? top + 1 : top);
    if (float_to_bf16(bits_float(tie)) != even && ++failures <= 10)
      ADD_FAILURE() << std::hex << "tie 0x" << tie << ": got 0x" << float_to_bf16(bits_float(tie))
                    << ", want 0x" << even;
    for (uint32_t b : {tie, tie - 1, tie + 1, top << 16, (top << 16) | 0xffffu}) {
      const uint16_t got = float_to_bf16(bits_float(b));
      const uint16_t want = ref_float_to_bf16(bits_float(b));
      if (got != want && ++failures <= 10)
        ADD_FAILURE() << std::hex << "float 0x" << b << ": got 0x" << got << ", want 0x" << want;
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(DTypeBF16, NaNStaysQuietNaN) {
  const uint32_t patterns[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7f80ffffu,
                               0x7fbfffffu, 0x7fffffffu, 0x7f808000u, 0xff80ffffu};
  for (uint32_t p : patterns) {
    const uint16_t h = float_to_bf16(bits_float(p));
    EXPECT_TRUE(bf16_is_nan(h)) << std::hex << "float 0x" << p << " -> 0x" << h;
    EXPECT_NE(h & 0x0040u, 0u) << std::hex << "float 0x" << p << " -> 0x" << h << " not quiet";
    EXPECT_EQ(h & 0x8000u, (p >> 16) & 0x8000u) << std::hex << "sign of 0x" << p;
  }
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up past max
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(DTypeBF16, ToFloatIsTopHalfAndRoundTrips) {
  int failures = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = bf16_to_float(static_cast<uint16_t>(h));
    if (float_bits(f) != (h << 16) && ++failures <= 10)
      ADD_FAILURE() << std::hex << "bf16 0x" << h << " -> float bits 0x" << float_bits(f);
    if (bf16_is_nan(static_cast<uint16_t>(h))) {
      if (!bf16_is_nan(float_to_bf16(f)) && ++failures <= 10)
        ADD_FAILURE() << std::hex << "NaN bf16 0x" << h << " lost";
      continue;
    }
    if (float_to_bf16(f) != h && ++failures <= 10)
      ADD_FAILURE() << std::hex << "bf16 0x" << h << " round-trips to 0x" << float_to_bf16(f);
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc040), -3.0f);
}

// ---------------------------------------------------------------------------------------------
// Bulk conversions and dtype names.

std::vector<float> sample_floats() {
  std::vector<float> v;
  for (uint32_t k = 0; k < 5000; ++k) v.push_back(bits_float(k * 858'993'461u));
  for (float x : {0.0f, -0.0f, 1.0f, 65520.0f, 0.1f}) v.push_back(x);
  return v;
}

// Every half value, and floats of every exponent, through kernels::convert at every level:
// the bits of the scalar conversions (vector converters on AVX2/AVX-512, scalar code on the
// generic level).
TEST(DTypeBulk, KernelConversionsMatchScalarAtEveryLevel) {
  const std::vector<float> in = sample_floats();
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> all(65536);
  for (uint32_t k = 0; k < all.size(); ++k) all[k] = static_cast<uint16_t>(k);
  test::for_each_isa([&](kernels::Isa) {
    std::vector<kernels::F16> h(in.size());
    std::vector<kernels::Bf16> b(in.size());
    kernels::convert(in.data(), h.data(), n);
    kernels::convert(in.data(), b.data(), n);
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(h[i].bits, float_to_f16(in[i])) << "index " << i;
      ASSERT_EQ(b[i].bits, float_to_bf16(in[i])) << "index " << i;
    }
    std::vector<float> rounded(in.size());
    kernels::round_to_f16(rounded.data(), in.data(), n);
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_EQ(float_bits(rounded[i]), float_bits(f16_to_float(float_to_f16(in[i])))) << i;
    kernels::round_to_bf16(rounded.data(), in.data(), n);
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_EQ(float_bits(rounded[i]), float_bits(bf16_to_float(float_to_bf16(in[i])))) << i;
    std::vector<float> wide(all.size());
    kernels::convert(reinterpret_cast<const kernels::F16*>(all.data()), wide.data(), 65536);
    for (uint32_t k = 0; k < all.size(); ++k)
      ASSERT_EQ(float_bits(wide[k]), float_bits(f16_to_float(all[k])))
          << "half 0x" << std::hex << k;
    kernels::convert(reinterpret_cast<const kernels::Bf16*>(all.data()), wide.data(), 65536);
    for (uint32_t k = 0; k < all.size(); ++k)
      ASSERT_EQ(float_bits(wide[k]), float_bits(bf16_to_float(all[k])))
          << "bf16 0x" << std::hex << k;
  });
}

TEST(DTypeNames, NamesSizesAndParsing) {
  struct Row {
    DType t;
    const char* name;
    size_t size;
  };
  const Row rows[] = {{DType::f32, "f32", 4},
                      {DType::f16, "f16", 2},
                      {DType::bf16, "bf16", 2},
                      {DType::i32, "i32", 4},
                      {DType::f64, "f64", 8}};
  for (const Row& r : rows) {
    EXPECT_EQ(dtype_name(r.t), r.name);
    EXPECT_EQ(dtype_size(r.t), r.size) << r.name;
    EXPECT_EQ(parse_dtype(r.name), r.t) << r.name;
  }
  EXPECT_THROW(parse_dtype("f8"), Error);
  EXPECT_THROW(parse_dtype(""), Error);
  EXPECT_THROW(parse_dtype("F32"), Error);
  try {
    parse_dtype("f8");
    FAIL() << "parse_dtype(\"f8\") did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f8"), std::string::npos) << e.what();
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
