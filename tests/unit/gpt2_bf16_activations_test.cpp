// GPT-2 bf16 models with bf16 activations (Model::set_activations, kernels/matmul/bf16_dot.h,
// whose bits its own test checks): decode = prefill and batched = alone bit for bit at any
// thread count, logits close to f32 activations', f32 activations' bits back when turned off,
// and clear errors where the mode cannot run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "gpt2_tiny.h"
#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

using test_tiny::all_logits;
using test_tiny::kTokens;
checkpoints::Gpt2Checkpoint tiny() { return test_tiny::checkpoint(); }

// The tiny model in bf16, with bf16 activations.
Model bf16_activations_model(const checkpoints::Gpt2Checkpoint& ck) {
  Model m(ck.config, ck.params, DType::bf16);
  m.set_activations(DType::bf16);
  return m;
}

TEST(Gpt2Bf16Activations, DecodeEqualsPrefillAtEveryThreadCount) {
  TINYLM_SKIP_UNLESS_BF16_DOT();
  const checkpoints::Gpt2Checkpoint ck = tiny();
  Model m = bf16_activations_model(ck);
  const std::vector<float> want = all_logits(m, kTokens);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    SCOPED_TRACE("threads " + std::to_string(threads));
    EXPECT_EQ(std::memcmp(all_logits(m, kTokens).data(), want.data(), want.size() * 4), 0);
    test_tiny::expect_decode_equals(m, want);
  }
  set_num_threads(0);
}

// Continuous batching: three sequences at different positions stepped together get the bits
// of each alone (3 rows: the batched tiles, not decode's).
TEST(Gpt2Bf16Activations, BatchedDecodingEqualsEachSequenceAlone) {
  TINYLM_SKIP_UNLESS_BF16_DOT();
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const int64_t V = ck.config.vocab_size;
  const int n = static_cast<int>(kTokens.size());
  Model m = bf16_activations_model(ck);
  const std::vector<float> want = all_logits(m, kTokens);
  const int prompts[3] = {1, 2, 6};
  std::vector<KvCache> caches;
  std::vector<float> one(V), rows(3 * V);
  for (const int p : prompts) {
    caches.push_back(m.new_cache(n));
    m.forward(std::span(kTokens).first(p), caches.back(), one);
  }
  KvCache* ptrs[3] = {&caches[0], &caches[1], &caches[2]};
  for (int step = 0; prompts[2] + step < n; ++step) {
    const int next[3] = {kTokens[prompts[0] + step], kTokens[prompts[1] + step],
                         kTokens[prompts[2] + step]};
    m.forward_batch(next, ptrs, rows);
    for (int s = 0; s < 3; ++s) {
      ASSERT_EQ(std::memcmp(rows.data() + s * V, want.data() + (prompts[s] + step) * V, V * 4), 0)
          << "sequence " << s << " step " << step;
    }
  }
}

// Rounding the activations to bf16 moves the logits by bf16's precision, not more; turning
// the mode off gives the f32-activation bits back (the matrices return to their layout).
TEST(Gpt2Bf16Activations, StayCloseToF32ActivationsAndTurnBack) {
  TINYLM_SKIP_UNLESS_BF16_DOT();
  const checkpoints::Gpt2Checkpoint ck = tiny();
  Model m(ck.config, ck.params, DType::bf16);
  const std::vector<float> a = all_logits(m, kTokens);
  m.set_activations(DType::bf16);
  EXPECT_EQ(m.activations(), DType::bf16);
  const std::vector<float> b = all_logits(m, kTokens);
  const test_tiny::Change c = test_tiny::change(a, b);
  EXPECT_GT(c.worst, 0);
  EXPECT_LT(c.worst, 0.02 * c.spread);
  m.set_activations(DType::bf16);  // again: nothing changes
  EXPECT_EQ(std::memcmp(all_logits(m, kTokens).data(), b.data(), b.size() * 4), 0);
  m.set_activations(DType::f32);
  EXPECT_EQ(std::memcmp(all_logits(m, kTokens).data(), a.data(), a.size() * 4), 0);
}

TEST(Gpt2Bf16Activations, ErrorsWhereTheModeCannotRun) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  for (DType t : {DType::f32, DType::f16, DType::q8_0}) {
    Model m(ck.config, ck.params, t);
    test::expect_error([&] { m.set_activations(DType::bf16); },
                       {"bf16 activations need a bf16 model", std::string(dtype_name(t))});
  }
  Model m(ck.config, ck.params, DType::bf16);
  if (kernels::bf16_dot_available()) {  // widths the kernels cannot take
    Config c;
    c.vocab_size = 100;
    c.n_positions = 8;
    c.n_embd = 48;  // whole 16 x 16 tiles, but not whole 32-input blocks of the head
    c.n_layer = 1;
    c.n_head = 4;
    Model narrow(c, std::vector<float>(param_layout(c).size(), 0.5f), DType::bf16);
    test::expect_error([&] { narrow.set_activations(DType::bf16); },
                       {"n_embd a multiple of 32", "48 and 192"});
  }
  test::for_each_isa([&](kernels::Isa isa) {
    if (kernels::bf16_dot_available()) return;
    test::expect_error([&] { m.set_activations(DType::bf16); },
                       {"gpt2: bf16 activations", "needs AVX512_BF16", std::string(isa_name(isa))});
    EXPECT_EQ(m.activations(), DType::f32);
  });
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
