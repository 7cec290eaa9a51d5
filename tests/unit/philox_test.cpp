// Philox4x32-10 against the known-answer vectors of the Random123 distribution
// (Random123-1.x, examples/kat_vectors, lines "philox4x32 10 ...").
#include "tinylm/core/philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

struct Kat {
  PhiloxCounter ctr;
  PhiloxKey key;
  PhiloxCounter out;
};

// Verbatim from Random123's kat_vectors: ctr[0..3] key[0..1] -> out[0..3].
const Kat kKats[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
     {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

TEST(Philox, Random123KnownAnswers) {
  for (const Kat& k : kKats) {
    const PhiloxCounter got = philox4x32_10(k.ctr, k.key);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(got[i], k.out[i]) << std::hex << "ctr " << k.ctr[0] << " " << k.ctr[1] << " "
                                  << k.ctr[2] << " " << k.ctr[3] << " key " << k.key[0] << " "
                                  << k.key[1] << " word " << i;
    }
  }
}

TEST(Philox, UsableAtCompileTime) {
  constexpr PhiloxCounter out = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out[0], 0x6627e8d5u);
}

// philox_uniform keys the block with (low, high) words of the seed and counts (a, b, c, d):
// its value follows from the same known answers, 24 top bits of the first output word.
TEST(Philox, UniformFromKnownAnswers) {
  const float scale = 1.0f / 16777216.0f;
  EXPECT_EQ(philox_uniform(0, 0, 0, 0, 0), static_cast<float>(0x6627e8d5u >> 8) * scale);
  EXPECT_EQ(
      philox_uniform(0xffffffffffffffffull, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu),
      static_cast<float>(0x408f276du >> 8) * scale);
  EXPECT_EQ(
      philox_uniform(0x299f31d0a4093822ull, 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u),
      static_cast<float>(0xd16cfe09u >> 8) * scale);
}

TEST(Philox, UniformInUnitIntervalAndDeterministic) {
  float lo = 1.0f, hi = 0.0f;
  double sum = 0.0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(i);
    const float x = philox_uniform(1234, u, 7, 0, u * 3u);
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    ASSERT_EQ(x, philox_uniform(1234, u, 7, 0, u * 3u));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  EXPECT_LT(lo, 1e-3f);
  EXPECT_GT(hi, 1.0f - 1e-3f);
  EXPECT_NEAR(sum / n, 0.5, 0.005);  // ~ 7 standard errors
}

TEST(Philox, UniformDependsOnEveryArgument) {
  const float base = philox_uniform(99, 1, 2, 3, 4);
  EXPECT_NE(philox_uniform(100, 1, 2, 3, 4), base);
  EXPECT_NE(philox_uniform(99 + (uint64_t{1} << 32), 1, 2, 3, 4), base);  // high seed word
  EXPECT_NE(philox_uniform(99, 0, 2, 3, 4), base);
  EXPECT_NE(philox_uniform(99, 1, 0, 3, 4), base);
  EXPECT_NE(philox_uniform(99, 1, 2, 0, 4), base);
  EXPECT_NE(philox_uniform(99, 1, 2, 3, 0), base);

  // Along each counter word, 1000 consecutive values are (nearly) all distinct.
  for (int arg = 0; arg < 5; ++arg) {
    std::set<float> seen;
    for (uint32_t i = 0; i < 1000; ++i) {
      uint64_t s = 99;
      uint32_t c[4] = {1, 2, 3, 4};
      if (arg == 0)
        s = uint64_t{i} << 32 | 99u;
      else
        c[arg - 1] = i;
      seen.insert(philox_uniform(s, c[0], c[1], c[2], c[3]));
    }
    EXPECT_GT(seen.size(), 990u) << "argument " << arg;
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
