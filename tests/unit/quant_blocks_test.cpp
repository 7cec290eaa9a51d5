// ggml's Q8_0 / Q4_0 blocks (and the k-quants' decoding): the quantizer's bytes and the
// dequantizer's values against an independent numpy implementation (tools/quant_reference.py,
// fixture in tests/fixtures/quant), and the block types' sizes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "test_util.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/quant/blocks.h"

namespace tinylm::kernels {
namespace TINYLM_TEST_LOCAL {

std::vector<uint8_t> fixture(const std::string& name) {
  std::ifstream f(test::source_path("tests/fixtures/quant/" + name), std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
std::vector<float> floats(const std::string& name) {
  const std::vector<uint8_t> b = fixture(name);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}
template <class Block>
std::vector<uint8_t> bytes(const std::vector<Block>& blocks) {
  std::vector<uint8_t> b(blocks.size() * sizeof(Block));
  std::memcpy(b.data(), blocks.data(), b.size());
  return b;
}
// Reports the first differing block, with its index (the fixture's blocks are documented in
// tools/quant_reference.py's inputs()).
void expect_same_blocks(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                        size_t block_bytes, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i += block_bytes) {
    ASSERT_EQ(std::memcmp(got.data() + i, want.data() + i, block_bytes), 0)
        << what << ": block " << i / block_bytes << " differs from the numpy reference";
  }
}

TEST(QuantBlocks, Q8_0BytesEqualTheNumpyReference) {
  const std::vector<float> x = floats("inputs.f32");
  ASSERT_EQ(x.size() % kQuantBlock, 0u);
  ASSERT_GT(x.size(), 0u);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<BlockQ8_0> q(x.size() / kQuantBlock);
    quantize_q8_0(x.data(), q.data(), static_cast<int64_t>(x.size()));
    expect_same_blocks(bytes(q), fixture("q8_0.bin"), sizeof(BlockQ8_0), "q8_0");
  }
  set_num_threads(0);
}

TEST(QuantBlocks, Q4_0BytesEqualTheNumpyReference) {
  const std::vector<float> x = floats("inputs.f32");
  std::vector<BlockQ4_0> q(x.size() / kQuantBlock);
  quantize_q4_0(x.data(), q.data(), static_cast<int64_t>(x.size()));
  expect_same_blocks(bytes(q), fixture("q4_0.bin"), sizeof(BlockQ4_0), "q4_0");
}

TEST(QuantBlocks, DequantizedValuesEqualTheNumpyReference) {
  for (DType t : {DType::q8_0, DType::q4_0}) {
    const std::vector<uint8_t> q = fixture(std::string(dtype_name(t)) + ".bin");
    const std::vector<float> want = floats(std::string(dtype_name(t)) + "_dequant.f32");
    const auto n = static_cast<int64_t>(want.size());
    ASSERT_EQ(q.size(), storage_bytes(t, n));
    std::vector<float> got(want.size());
    dequantize(t, q.data(), got.data(), n);
    for (size_t i = 0; i < got.size(); ++i) {
      const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
      ASSERT_TRUE(both_nan || float_bits(got[i]) == float_bits(want[i]))
          << dtype_name(t) << " value " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

// The k-quants, which tinylm only reads (llama.cpp's Q4_0 files keep a tied token_embd in Q6_K;
// its Q4_K_M / Q5_K_M files mix Q4_K, Q5_K and Q6_K): blocks of random bits and edge scales
// (zero, subnormal, 65504, inf, NaN), decoded. (The numpy decoders were also checked against
// ggml's own dequantize_row_q6_K / _q4_K / _q5_K, outside the repository: the same bits.)
template <class Block>
void expect_numpy_decoding(const std::string& name) {
  SCOPED_TRACE(name);
  const std::vector<uint8_t> q = fixture(name + ".bin");
  const std::vector<float> want = floats(name + "_dequant.f32");
  ASSERT_EQ(q.size() / sizeof(Block) * kSuperBlock, want.size());
  std::vector<float> got(want.size());
  dequantize(reinterpret_cast<const Block*>(q.data()), got.data(),
             static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    ASSERT_TRUE(both_nan || float_bits(got[i]) == float_bits(want[i]))
        << "value " << i << ": " << got[i] << " vs " << want[i];
  }
  test::expect_error([&] { dequantize(reinterpret_cast<const Block*>(q.data()), got.data(), 255); },
                     {"256-value blocks"});
}

TEST(QuantBlocks, KQuantsDecodeAsTheNumpyReference) {
  expect_numpy_decoding<BlockQ6_K>("q6_k");
  expect_numpy_decoding<BlockQ4_K>("q4_k");
  expect_numpy_decoding<BlockQ5_K>("q5_k");
}

TEST(QuantBlocks, RoundTripErrorIsWithinHalfAStep) {
  // Ordinary weights: each value within half a quantization step (d/2) of the original, plus
  // the fp16 rounding of d itself (|q| * d * 2^-11); Q4_0's far end may clip by one step at most
  // (the min 15).
  const std::vector<float> x = test::random_uniform(32 * 64, 7, -0.3f, 0.3f);
  const auto n = static_cast<int64_t>(x.size());
  for (DType t : {DType::q8_0, DType::q4_0}) {
    std::vector<uint8_t> q(storage_bytes(t, n));
    std::vector<float> y(x.size());
    quantize(t, x.data(), q.data(), n);
    dequantize(t, q.data(), y.data(), n);
    for (int64_t b = 0; b < n / kQuantBlock; ++b) {
      float amax = 0;
      for (int64_t j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::abs(x[b * 32 + j]));
      const float step = t == DType::q8_0 ? amax / 127 : amax / 8;
      for (int64_t j = 0; j < kQuantBlock; ++j) {
        const size_t i = static_cast<size_t>(b * 32 + j);
        const float bound = t == DType::q8_0 ? 0.5f + 127.0f / 2048 : 1.0f + 8.0f / 2048;
        EXPECT_LE(std::abs(y[i] - x[i]), bound * step * 1.0001f) << dtype_name(t) << " value " << i;
      }
    }
  }
}

// Q8_0 rounds x / d halves away from zero (C's roundf), whatever the integer part: a block whose
// largest magnitude is 127 has d = 1 and id = 1, so q is roundf(x) itself.
TEST(QuantBlocks, Q8_0RoundsHalvesAwayFromZero) {
  const float x[32] = {127.0f,     0.5f,   -0.5f,   1.5f,        -1.5f,        2.5f,
                       -2.5f,      126.5f, -126.5f, 0.49999997f, -0.49999997f, 1.4999999f,
                       3.5000002f, 0.0f,   -0.0f,   64.5f,       -64.5f,       99.49999f,
                       1e-30f,     -7.5f,  7.25f,   -7.75f};
  const int want[32] = {127, 1, -1, 2, -2, 3,   -3, 127, -127, 0, 0,
                        1,   4, 0,  0, 65, -65, 99, 0,   -8,   7, -8};
  BlockQ8_0 b;
  quantize_q8_0(x, &b, 32);
  EXPECT_EQ(block_scale(b), 1.0f);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(b.qs[j], want[j]) << "x = " << x[j];
}

TEST(QuantBlocks, SizesAndMisuse) {
  EXPECT_EQ(storage_bytes(DType::q8_0, 64), 68u);
  EXPECT_EQ(storage_bytes(DType::q4_0, 96), 54u);
  EXPECT_EQ(storage_bytes(DType::bf16, 3), 6u);
  EXPECT_EQ(storage_bytes(DType::q4_0, 0), 0u);
  EXPECT_EQ(dtype_block_size(DType::q8_0), 32);
  EXPECT_EQ(dtype_block_size(DType::f32), 1);
  EXPECT_TRUE(is_quantized(DType::q4_0));
  EXPECT_FALSE(is_quantized(DType::f16));
  EXPECT_EQ(parse_dtype("q8_0"), DType::q8_0);
  EXPECT_EQ(parse_dtype("q4_0"), DType::q4_0);
  EXPECT_EQ(dtype_name(DType::q4_0), "q4_0");
  // A block type has no size per element, and counts must be whole blocks.
  test::expect_error([] { (void)dtype_size(DType::q8_0); }, {"q8_0", "block type"});
  test::expect_error([] { (void)storage_bytes(DType::q4_0, 33); }, {"33", "q4_0", "32"});
  test::expect_error([] { (void)storage_bytes(DType::q8_0, -32); }, {"negative"});
  std::vector<float> x(40);
  std::vector<BlockQ8_0> q(2);
  test::expect_error([&] { quantize_q8_0(x.data(), q.data(), 40); }, {"40", "32"});
  test::expect_error([&] { quantize(DType::f32, x.data(), q.data(), 32); }, {"f32"});
  test::expect_error([&] { dequantize(DType::bf16, q.data(), x.data(), 32); }, {"bf16"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::kernels
