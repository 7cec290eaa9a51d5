// The KV cache's type chosen apart from the weights' (Model::set_cache_type, --cache-type): a
// 16-bit cache keeps the forward's promises (decode equals prefill, a batch equals each sequence
// alone, the same bits at every level), moves the logits by the keys' and values' rounding only,
// and caches of the wrong type are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "gpt2_tiny.h"
#include "test_util.h"
#include "tinylm/core/parallel.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

using test_tiny::all_logits;
using test_tiny::kTokens;

struct Types {
  DType weights, activations;
};
const Types kModels[] = {
    {DType::f32, DType::f32}, {DType::bf16, DType::f32}, {DType::q8_0, DType::q8_0}};

Model model(const Types& t) {
  const checkpoints::Gpt2Checkpoint ck = test_tiny::checkpoint();
  Model m(ck.config, ck.params, t.weights);
  m.set_activations(t.activations);
  return m;
}

TEST(Gpt2CacheType, DefaultsToTheWeightsTypeForHalvesElseF32) {
  EXPECT_EQ(model({DType::f32, DType::f32}).cache_type(), DType::f32);
  EXPECT_EQ(model({DType::bf16, DType::f32}).cache_type(), DType::bf16);
  EXPECT_EQ(model({DType::f16, DType::f32}).cache_type(), DType::f16);
  EXPECT_EQ(model({DType::q8_0, DType::f32}).cache_type(), DType::f32);
  EXPECT_EQ(model({DType::q4_0, DType::q8_0}).cache_type(), DType::f32);
}

TEST(Gpt2CacheType, SixteenBitCachesDecodeAsPrefillAndBatchAtEveryLevel) {
  for (const Types& t : kModels) {
    for (DType cache : {DType::bf16, DType::f16}) {
      const std::string what =
          std::string(dtype_name(t.weights)) + " weights, " + std::string(dtype_name(cache));
      SCOPED_TRACE(what);
      Model m = model(t);
      m.set_cache_type(cache);
      EXPECT_EQ(m.cache_type(), cache);
      EXPECT_EQ(m.new_cache(4).dtype, cache);
      const std::vector<float> want =
          test::expect_same_at_every_level([&] { return all_logits(m, kTokens); }, what);
      test::for_each_isa([&](kernels::Isa) {
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          test_tiny::expect_decode_equals(m, want);
        }
        set_num_threads(0);
        test_tiny::expect_batch_equals(m, want);
      });
    }
  }
}

// Keys and values rounded to 16 bits as they are stored: the logits move, by little.
TEST(Gpt2CacheType, MovesTheLogitsByTheCachesRoundingOnly) {
  for (const Types& t : kModels) {
    Model m = model(t);
    const DType own = m.cache_type();
    const std::vector<float> a = all_logits(m, kTokens);
    for (DType cache : {DType::f32, DType::bf16, DType::f16}) {
      if (cache == own) continue;
      SCOPED_TRACE(std::string(dtype_name(t.weights)) + " weights, " +
                   std::string(dtype_name(cache)) + " cache");
      m.set_cache_type(cache);
      const test_tiny::Change c = test_tiny::change(a, all_logits(m, kTokens));
      EXPECT_GT(c.worst, 0);
      // bf16 keeps 8 bits of each key and value, f16 11; through two layers (and, with 8-bit
      // activations, a rounded value can move an activation across a quantization step).
      EXPECT_LT(c.worst, (cache == DType::bf16 ? 0.03 : 0.01) * c.spread);
    }
    m.set_cache_type(own);
    const std::vector<float> back = all_logits(m, kTokens);
    EXPECT_EQ(std::memcmp(back.data(), a.data(), a.size() * 4), 0);
  }
}

TEST(Gpt2CacheType, OtherTypesAndCachesMadeBeforeAreErrors) {
  Model m = model({DType::q8_0, DType::f32});
  test::expect_error([&] { m.set_cache_type(DType::q8_0); }, {"q8_0", "f32, bf16 or f16"});
  KvCache before = m.new_cache(8);
  m.set_cache_type(DType::f16);
  std::vector<float> logits(m.config().vocab_size);
  test::expect_error([&] { m.forward(std::span(kTokens).first(2), before, logits); },
                     {"KV cache of f32", "cache type is f16", "after set_cache_type"});
  KvCache other = m.new_cache(8);
  KvCache* both[2] = {&other, &before};
  const int next[2] = {1, 2};
  std::vector<float> rows(2 * logits.size());
  test::expect_error([&] { m.forward_batch(next, both, rows); }, {"KV cache of f32"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
