// kernels/matmul/bf16_dot.h: the VDPBF16PS kernels give bf16_dot_reference.h's bits (the
// instruction's documented arithmetic as plain loops) for every row count, width and thread
// count; hand-worked values for the rounding and the flushing; the pairs layout; the errors.
// The AMX kernels, whose grouping of a tile step is not documented, within recursive
// summation's bound of the exact sums, and each row the same bits alone as in a batch.
// The products run only where the CPU has AVX512_BF16 and the avx512 level is active (else
// those tests skip, saying so, and the error test checks the refusal); the AMX ones where the
// CPU has AMX-BF16 too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "test_util.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/matmul/bf16_dot_reference.h"
#include "tinylm/kernels/matmul/stream.h"

namespace tinylm::kernels {
namespace TINYLM_TEST_LOCAL {

Bf16 bf16(float v) { return {float_to_bf16(v)}; }

// Random bf16 weights (normal, scale 0.05) with zeros and subnormals among them.
std::vector<Bf16> random_weights(size_t n, uint64_t seed) {
  const std::vector<double> v = test::random_normal(n, seed, 0.05);
  std::vector<Bf16> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = bf16(static_cast<float>(v[i]));
  for (size_t i = 3; i < n; i += 97) w[i] = {static_cast<uint16_t>(0x0001 + i % 0x7f)};
  for (size_t i = 5; i < n; i += 89) w[i] = {0x8000};
  return w;
}

// Random activations (normal, scale 1) with ties of bf16 rounding and subnormals among them.
std::vector<float> random_inputs(size_t n, uint64_t seed) {
  const std::vector<double> v = test::random_normal(n, seed);
  std::vector<float> x(v.begin(), v.end());
  for (size_t i = 7; i < n; i += 31) x[i] = 1.0f + 0x1p-8f;  // a tie: to 1
  for (size_t i = 11; i < n; i += 37) x[i] = -0x1.03p0f;     // a tie: up, to even
  for (size_t i = 13; i < n; i += 41) x[i] = 0x1p-130f;      // subnormal: zero
  return x;
}

// Runs the test's products on `unit` until it ends.
using UnitScope = test::UnitScope<Bf16Unit, bf16_dot_unit, set_bf16_dot_unit>;

// W (nin, nout) row-major into the pairs layout.
std::vector<Bf16> to_pairs(const std::vector<Bf16>& w, int64_t nin, int64_t nout) {
  std::vector<Bf16> p(w.size());
  pack_tiles(p.data(), w.data(), nin, nout);
  tiles_to_pairs(p.data(), nin, nout);
  return p;
}

TEST(OpsBf16Dot, InOutEqualsTheReference) {
  TINYLM_SKIP_UNLESS_BF16_DOT();
  const UnitScope unit(Bf16Unit::vdpbf16ps);
  // 80 and 208 inputs end in a partial chunk; 208 and 112 outputs leave column blocks over
  // the kernel's 3-block tile; 3..70 rows cover the row tile (8) and its rests, 133 a second
  // block of rows (128 a block) with a rest.
  const int64_t shapes[][2] = {{64, 48}, {128, 96}, {80, 112}, {208, 208}};
  for (const auto& s : shapes) {
    const int64_t nin = s[0], nout = s[1];
    const std::vector<Bf16> w = random_weights(nin * nout, nin + nout);
    const std::vector<Bf16> pairs = to_pairs(w, nin, nout);
    const std::vector<float> bias = test::random_uniform(nout, 3);
    for (int64_t rows : {1, 2, 3, 8, 13, 32, 70, 133}) {
      const std::vector<float> x = random_inputs(rows * nin, rows);
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> want(rows * nout);
        reference::bf16_dot_in_out(want.data(), x.data(), w.data(), b, rows, nin, nout);
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          std::vector<float> got(rows * nout, NAN);
          matmul_in_out_bf16(got.data(), x.data(), pairs.data(), b, rows, nin, nout);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
              << nin << " x " << nout << ", " << rows << " rows, " << threads << " threads"
              << (b ? "" : ", no bias");
        }
      }
    }
  }
  set_num_threads(0);
}

TEST(OpsBf16Dot, OutInEqualsTheReference) {
  TINYLM_SKIP_UNLESS_BF16_DOT();
  const UnitScope unit(Bf16Unit::vdpbf16ps);
  // 1, 5, 13 and 50 outputs: whole tiles of 4 and 6 and the outputs over; rows for every tile
  // (1, 2, 6 x 4 up to 16, 4 x 6 beyond) and its rests.
  for (int64_t nin : {32, 96, 768}) {
    for (int64_t nout : {1, 5, 13, 50}) {
      const std::vector<Bf16> w = random_weights(nin * nout, nin * nout);
      for (int64_t rows : {1, 2, 3, 7, 16, 17, 33}) {
        const std::vector<float> x = random_inputs(rows * nin, rows + 100);
        std::vector<float> want(rows * nout);
        reference::bf16_dot_out_in(want.data(), x.data(), w.data(), rows, nin, nout);
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          std::vector<float> got(rows * nout, NAN);
          matmul_out_in_bf16(got.data(), x.data(), w.data(), rows, nin, nout);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
              << nin << " inputs, " << nout << " outputs, " << rows << " rows, " << threads
              << " threads";
        }
      }
    }
  }
  set_num_threads(0);
}

// One output of a 32-input head: products of chosen inputs (x) with chosen weights (w); the
// reference must give the same value.
float head_of(const std::vector<float>& x, const std::vector<Bf16>& w) {
  float y = NAN, want = NAN;
  matmul_out_in_bf16(&y, x.data(), w.data(), 1, 32, 1);
  reference::bf16_dot_out_in(&want, x.data(), w.data(), 1, 32, 1);
  EXPECT_EQ(y, want);
  return y;
}

// Values worked out by hand from the instruction's definition: rounding to nearest even,
// subnormal inputs read as zero, tiny results flushed.
TEST(OpsBf16Dot, RoundsAndFlushesAsTheInstruction) {
  TINYLM_SKIP_UNLESS_BF16_DOT();
  const UnitScope unit(Bf16Unit::vdpbf16ps);
  std::vector<float> x(32, 0.0f);
  std::vector<Bf16> w(32, Bf16{0});
  w[0] = bf16(1.0f);
  x[0] = 1.0f + 0x1p-8f;  // halfway between 1 and 1 + 2^-7: to even, 1
  EXPECT_EQ(head_of(x, w), 1.0f);
  x[0] = 1.0f + 3 * 0x1p-8f;  // halfway between 1 + 2^-7 and 1 + 2^-6: to even, 1 + 2^-6
  EXPECT_EQ(head_of(x, w), 1.0f + 0x1p-6f);
  x[0] = 1.0f + 0x1.8p-8f;  // above halfway: up
  EXPECT_EQ(head_of(x, w), 1.0f + 0x1p-7f);
  x[0] = 0x1p-127f;  // a subnormal activation reads as zero (else 0.5 with w = 2^126)
  w[0] = bf16(0x1p126f);
  EXPECT_EQ(head_of(x, w), 0.0f);
  x[0] = 0x1p100f;  // a subnormal weight reads as zero (else 2^-33)
  w[0] = {0x0001};
  EXPECT_EQ(head_of(x, w), 0.0f);
  x[0] = 0x1p-65f;  // a product of 2^-130 alone: flushed
  w[0] = bf16(0x1p-65f);
  EXPECT_EQ(head_of(x, w), 0.0f);
  x[0] = -0x1.8p-63f;  // 2^-125 - 1.5 2^-126 (lane 0's other input first): a sum below 2^-126
  w[0] = bf16(0x1p-63f);
  x[1] = 0x1p-62f;
  w[1] = bf16(0x1p-63f);
  EXPECT_EQ(head_of(x, w), 0.0f);
  x[0] = 0.0f;  // 2^-125 alone: kept
  EXPECT_EQ(head_of(x, w), 0x1p-125f);
}

#define TINYLM_SKIP_UNLESS_AMX()                                             \
  TINYLM_SKIP_UNLESS_BF16_DOT();                                             \
  if (!cpu_has_amx_bf16()) {                                                 \
    GTEST_SKIP() << "AMX products need AMX-BF16; this CPU (or OS) lacks it"; \
  }                                                                          \
  const UnitScope amx_unit(Bf16Unit::amx)

// Checks every row of `got` (rows x nout) against the exact sums of the rounded inputs
// (`exact(r, c, &magnitude)` returns the sum and the sum of its terms' magnitudes): within
// n 2^-24 of the magnitude, recursive summation's bound for n terms, and 2^-120 n for the
// products flushed below 2^-126. Then each row computed alone must give the same bits.
void expect_close_and_alone(const std::vector<float>& got, int64_t rows, int64_t nout,
                            int64_t nterms,
                            const std::function<double(int64_t, int64_t, double*)>& exact,
                            const std::function<void(float*, int64_t)>& run_row,
                            const std::string& what) {
  int64_t far = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < nout; ++c) {
      double magnitude = 0;
      const double want = exact(r, c, &magnitude);
      const double bound = static_cast<double>(nterms) * (0x1p-24 * magnitude + 0x1p-120);
      if (!(std::fabs(got[r * nout + c] - want) <= bound) && far++ < 3)
        ADD_FAILURE() << what << ": row " << r << ", output " << c << ": " << got[r * nout + c]
                      << ", exact " << want << ", bound " << bound;
    }
  }
  for (int64_t r = 0; r < rows; r += 1 + rows / 5) {
    std::vector<float> one(nout, NAN);
    run_row(one.data(), r);
    EXPECT_EQ(std::memcmp(one.data(), got.data() + r * nout, nout * 4), 0)
        << what << ": row " << r << " alone";
  }
}

double rounded(float x) { return reference::bf16_dot_value(reference::bf16_dot_round(x)); }

TEST(OpsBf16Dot, AmxInOutIsCloseToTheExactSumsAndRowsAreIndependent) {
  TINYLM_SKIP_UNLESS_AMX();
  // 48 and 208 outputs end in a group of 3 and 1 column blocks (4 a group); 16 rows a tile,
  // 128 an item: 17, 70 and 133 rows end in partial tiles and items.
  const int64_t shapes[][2] = {{64, 48}, {128, 96}, {80, 112}, {208, 208}, {768, 256}};
  for (const auto& s : shapes) {
    const int64_t nin = s[0], nout = s[1];
    const std::vector<Bf16> w = random_weights(nin * nout, nin + nout);
    const std::vector<Bf16> pairs = to_pairs(w, nin, nout);
    const std::vector<float> bias = test::random_uniform(nout, 3);
    for (int64_t rows : {1, 2, 3, 16, 17, 70, 133}) {
      const std::vector<float> x = random_inputs(rows * nin, rows);
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
        const auto exact = [&](int64_t r, int64_t c, double* magnitude) {
          double sum = b ? b[c] : 0.0;
          *magnitude = std::fabs(sum);
          for (int64_t i = 0; i < nin; ++i) {
            const double p = rounded(x[r * nin + i]) * reference::bf16_dot_value(w[i * nout + c]);
            sum += p;
            *magnitude += std::fabs(p);
          }
          return sum;
        };
        const auto run_row = [&](float* y, int64_t r) {
          matmul_in_out_bf16(y, x.data() + r * nin, pairs.data(), b, 1, nin, nout);
        };
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          std::vector<float> got(rows * nout, NAN);
          matmul_in_out_bf16(got.data(), x.data(), pairs.data(), b, rows, nin, nout);
          expect_close_and_alone(got, rows, nout, nin + 1, exact, run_row,
                                 std::to_string(nin) + " x " + std::to_string(nout) + ", " +
                                     std::to_string(rows) + " rows, " + std::to_string(threads) +
                                     " threads" + (b ? "" : ", no bias"));
        }
      }
    }
  }
  set_num_threads(0);
}

TEST(OpsBf16Dot, AmxOutInIsCloseToTheExactSumsAndRowsAreIndependent) {
  TINYLM_SKIP_UNLESS_AMX();
  // 1, 13 and 50 outputs: short of a block of 16, and over; 257: a second group of 256.
  // Rows: 16 a block, 64 a group.
  for (int64_t nin : {32, 96, 768}) {
    for (int64_t nout : {1, 13, 50, 257}) {
      const std::vector<Bf16> w = random_weights(nin * nout, nin * nout);
      for (int64_t rows : {1, 2, 16, 17, 33, 70}) {
        const std::vector<float> x = random_inputs(rows * nin, rows + 100);
        const auto exact = [&](int64_t r, int64_t o, double* magnitude) {
          double sum = 0;
          *magnitude = 0;
          for (int64_t i = 0; i < nin; ++i) {
            const double p = rounded(x[r * nin + i]) * reference::bf16_dot_value(w[o * nin + i]);
            sum += p;
            *magnitude += std::fabs(p);
          }
          return sum;
        };
        const auto run_row = [&](float* y, int64_t r) {
          matmul_out_in_bf16(y, x.data() + r * nin, w.data(), 1, nin, nout);
        };
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          std::vector<float> got(rows * nout, NAN);
          matmul_out_in_bf16(got.data(), x.data(), w.data(), rows, nin, nout);
          expect_close_and_alone(got, rows, nout, nin, exact, run_row,
                                 std::to_string(nin) + " inputs, " + std::to_string(nout) +
                                     " outputs, " + std::to_string(rows) + " rows, " +
                                     std::to_string(threads) + " threads");
        }
      }
    }
  }
  set_num_threads(0);
}

TEST(OpsBf16Dot, UnitsAndTheirNames) {
  EXPECT_EQ(bf16_unit_name(Bf16Unit::vdpbf16ps), "vdpbf16ps");
  EXPECT_EQ(bf16_unit_name(Bf16Unit::amx), "amx");
  const Bf16Unit saved = bf16_dot_unit();
  if (std::getenv("TINYLM_BF16_UNIT") == nullptr) {  // the default: AMX where there is AMX
    EXPECT_EQ(saved, cpu_has_amx_bf16() ? Bf16Unit::amx : Bf16Unit::vdpbf16ps);
  }
  if (!cpu_has_amx_bf16()) {
    test::expect_error([] { set_bf16_dot_unit(Bf16Unit::amx); }, {"AMX-BF16"});
  }
  set_bf16_dot_unit(Bf16Unit::vdpbf16ps);
  EXPECT_EQ(bf16_dot_unit(), Bf16Unit::vdpbf16ps);
  set_bf16_dot_unit(saved);
}

TEST(OpsBf16Dot, PairsLayoutAndErrors) {
  const int64_t nin = 32, nout = 48;
  std::vector<Bf16> w(nin * nout);
  for (size_t i = 0; i < w.size(); ++i) w[i] = {static_cast<uint16_t>(i)};
  std::vector<Bf16> p = to_pairs(w, nin, nout);
  // W(i, c) sits in tile (i / 16, c / 16) (3 tiles a band), at pair (i % 16) / 2, column c % 16,
  // half i % 2.
  for (int64_t i = 0; i < nin; ++i) {
    for (int64_t c = 0; c < nout; ++c) {
      const int64_t at = ((i / 16) * 3 + c / 16) * 256 + (i % 16) / 2 * 32 + (c % 16) * 2 + i % 2;
      ASSERT_EQ(p[at].bits, w[i * nout + c].bits) << i << ", " << c;
    }
  }
  std::vector<Bf16> tiles(w.size());
  pack_tiles(tiles.data(), w.data(), nin, nout);
  pairs_to_tiles(p.data(), nin, nout);
  EXPECT_EQ(std::memcmp(p.data(), tiles.data(), p.size() * 2), 0);
  test::expect_error([&] { tiles_to_pairs(p.data(), 24, 48); }, {"24 x 48", "16 x 16 tiles"});

  std::vector<float> x(2 * nin), y(2 * nout);
  if (bf16_dot_available()) {
    test::expect_error(
        [&] { matmul_in_out_bf16(y.data(), x.data(), p.data(), nullptr, 1, 24, 48); },
        {"matmul_in_out_bf16", "24 x 48"});
    test::expect_error([&] { matmul_out_in_bf16(y.data(), x.data(), p.data(), 1, 48, 2); },
                       {"matmul_out_in_bf16", "48 inputs", "multiple of 32"});
  }
  // Refused at every level where the instruction is not there (or not in use).
  test::for_each_isa([&](Isa isa) {
    if (bf16_dot_available()) return;
    EXPECT_FALSE(isa == Isa::avx512 && cpu_has_avx512_bf16());
    test::expect_error(
        [&] { matmul_in_out_bf16(y.data(), x.data(), p.data(), nullptr, 1, nin, nout); },
        {"matmul_in_out_bf16", "needs AVX512_BF16", std::string(isa_name(isa))});
    test::expect_error([&] { matmul_out_in_bf16(y.data(), x.data(), p.data(), 1, nin, nout); },
                       {"matmul_out_in_bf16", "needs AVX512_BF16"});
  });
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels
