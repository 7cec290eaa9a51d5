// Products with quantized weights (kernels/quant/matmul.h): an f32 product over the
// dequantized weights, bit for bit, at every level, for any row grouping and thread count.
// (Dequantization itself is checked against numpy in quant_blocks_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/kernels/quant/matmul.h"

namespace tinylm::kernels {
namespace TINYLM_TEST_LOCAL {

struct Case {
  int64_t rows, nin, nout;
  bool bias;
};

struct Operands {
  std::vector<float> x, b, w_dequant;
  std::vector<uint8_t> w;  // blocks
};

Operands operands(DType t, const Case& c, uint32_t seed) {
  Operands o;
  o.x = test::random_uniform(static_cast<size_t>(c.rows * c.nin), seed, -2.0f, 2.0f);
  if (c.bias) o.b = test::random_uniform(static_cast<size_t>(c.nout), seed + 1);
  o.w.resize(storage_bytes(t, c.nout * c.nin));
  if (dtype_block_size(t) == 256) {
    const std::vector<std::byte> q =
        test::random_k_quant(t, o.w.size() / dtype_block_bytes(t), seed + 2);
    std::memcpy(o.w.data(), q.data(), q.size());
  } else {
    const std::vector<float> w =
        test::random_uniform(static_cast<size_t>(c.nout * c.nin), seed + 2, -0.5f, 0.5f);
    quantize(t, w.data(), o.w.data(), c.nout * c.nin);
  }
  o.w_dequant.resize(static_cast<size_t>(c.nout * c.nin));
  dequantize(t, o.w.data(), o.w_dequant.data(), c.nout * c.nin);
  return o;
}

std::vector<float> product(DType t, const Operands& o, const Case& c) {
  std::vector<float> y(static_cast<size_t>(c.rows * c.nout), -1.0f);
  quant_matmul(t, y.data(), o.x.data(), o.w.data(), c.bias ? o.b.data() : nullptr, c.rows, c.nin,
               c.nout);
  return y;
}

// (2304 inputs: the prefill's chains carry over spans of 1024.)
const Case kCases[] = {{1, 32, 1, false},   {1, 768, 100, true},  {2, 96, 67, true},
                       {3, 64, 5, false},   {5, 160, 64, true},   {17, 256, 37, true},
                       {70, 96, 130, true}, {300, 64, 29, false}, {20, 2304, 33, true}};
// The k-quants' blocks hold 256 weights.
const Case kCasesK[] = {{1, 256, 1, false},   {1, 768, 100, true},   {2, 512, 67, true},
                        {3, 256, 5, false},   {5, 768, 64, true},    {17, 256, 37, true},
                        {70, 512, 130, true}, {300, 256, 29, false}, {20, 2304, 33, true}};

std::span<const Case> cases(DType t) {
  if (dtype_block_size(t) == 256) return kCasesK;
  return kCases;
}

TEST(QuantMatmul, EqualsTheF32ProductOverDequantizedWeightsAtEveryLevel) {
  for (DType t : {DType::q8_0, DType::q4_0, DType::q6_k, DType::q4_k, DType::q5_k}) {
    for (const Case& c : cases(t)) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " rows " + std::to_string(c.rows) + " nin " +
                   std::to_string(c.nin) + " nout " + std::to_string(c.nout));
      const Operands o = operands(t, c, 11);
      const std::vector<float> got =
          test::expect_same_at_every_level([&] { return product(t, o, c); }, "quant_matmul");
      // The f32 streaming kernel on the dequantized matrix, then the bias: the same bits.
      std::vector<float> want(got.size());
      matmul_out_in(want.data(), o.x.data(), o.w_dequant.data(), c.rows, c.nin, c.nout);
      if (c.bias) {
        for (int64_t r = 0; r < c.rows; ++r) {
          for (int64_t j = 0; j < c.nout; ++j) want[r * c.nout + j] += o.b[j];
        }
      }
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
      // And within f32 rounding of the exact product (double, plain loops).
      for (int64_t r = 0; r < c.rows; ++r) {
        for (int64_t j = 0; j < c.nout; ++j) {
          double s = c.bias ? o.b[j] : 0.0, mag = std::abs(s);
          for (int64_t i = 0; i < c.nin; ++i) {
            const double p = double(o.x[r * c.nin + i]) * o.w_dequant[j * c.nin + i];
            s += p;
            mag += std::abs(p);
          }
          ASSERT_NEAR(got[r * c.nout + j], s, mag * c.nin * 6e-8 + 1e-30) << r << " " << j;
        }
      }
    }
  }
}

TEST(QuantMatmul, RowsAloneEqualRowsTogetherAtAnyThreadCount) {
  for (DType t : {DType::q8_0, DType::q4_0, DType::q6_k, DType::q4_k, DType::q5_k}) {
    const Case all{40, dtype_block_size(t) == 256 ? 512 : 192, 70, true};
    const Operands o = operands(t, all, 3);
    test::for_each_isa([&](Isa) {
      set_num_threads(1);
      const std::vector<float> one_thread = product(t, o, all);
      set_num_threads(2);
      const std::vector<float> batch = product(t, o, all);
      EXPECT_EQ(std::memcmp(one_thread.data(), batch.data(), batch.size() * 4), 0)
          << dtype_name(t) << ": 1 vs 2 threads";
      // Each row alone (decode) and in pairs equals its row of the batch (prefill).
      for (int64_t group : {1, 2, 3, 7}) {
        for (int64_t r0 = 0; r0 < all.rows; r0 += group) {
          const int64_t n = std::min(group, all.rows - r0);
          std::vector<float> y(static_cast<size_t>(n * all.nout));
          quant_matmul(t, y.data(), o.x.data() + r0 * all.nin, o.w.data(), o.b.data(), n, all.nin,
                       all.nout);
          ASSERT_EQ(std::memcmp(y.data(), batch.data() + r0 * all.nout, y.size() * 4), 0)
              << dtype_name(t) << ": rows " << r0 << " +" << n;
        }
      }
    });
    set_num_threads(0);
  }
}

TEST(QuantMatmul, ZeroRowsWriteNothing) {
  std::vector<float> x(64), y(3, 7.0f);
  std::vector<BlockQ4_0> w(6);
  quant_matmul(y.data(), x.data(), w.data(), nullptr, 0, 64, 3);
  EXPECT_EQ(y, std::vector<float>(3, 7.0f));
}

TEST(QuantMatmul, RejectsWidthsThatAreNotWholeBlocks) {
  std::vector<float> x(48), y(2);
  std::vector<BlockQ8_0> w(4);
  test::expect_error([&] { quant_matmul(y.data(), x.data(), w.data(), nullptr, 1, 48, 2); },
                     {"48", "multiple of 32"});
  std::vector<BlockQ6_K> q6(1);
  test::expect_error([&] { quant_matmul(y.data(), x.data(), q6.data(), nullptr, 1, 32, 1); },
                     {"32", "multiple of 256"});
  test::expect_error(
      [&] { quant_matmul(DType::f16, y.data(), x.data(), w.data(), nullptr, 1, 32, 1); }, {"f16"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels
