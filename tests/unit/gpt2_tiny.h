#pragma once
// The tiny GPT-2 fixture (tests/fixtures/gpt2/tiny: 2 layers, n_embd 64, vocabulary 1000) and a
// forward over it, for the tests of its storage and activation types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::gpt2::test_tiny {

inline checkpoints::Gpt2Checkpoint checkpoint() {
  return checkpoints::load_gpt2(test::source_path("tests/fixtures/gpt2/tiny/model.safetensors"),
                                test::source_path("tests/fixtures/gpt2/tiny/config.json"));
}

inline const std::vector<int> kTokens = {5, 17, 999, 0, 3, 250, 251, 7, 7, 7, 42, 600, 13};

// Every position's logits of `tokens` run as one prompt: (tokens.size(), vocab).
inline std::vector<float> all_logits(Model& m, std::span<const int> tokens) {
  KvCache cache = m.new_cache(static_cast<int>(tokens.size()));
  std::vector<float> logits(tokens.size() * m.config().vocab_size);
  m.forward(tokens, cache, logits, true);
  return logits;
}

// Decoding kTokens token by token (a 4-token prompt first) gives every position's logits of
// `want` (all_logits of kTokens) bit for bit.
inline void expect_decode_equals(Model& m, const std::vector<float>& want) {
  const int64_t V = m.config().vocab_size;
  const int n = static_cast<int>(kTokens.size());
  KvCache cache = m.new_cache(n);
  std::vector<float> one(V);
  m.forward(std::span(kTokens).first(4), cache, one);
  ASSERT_EQ(std::memcmp(one.data(), want.data() + 3 * V, V * 4), 0) << "prompt";
  for (int p = 4; p < n; ++p) {
    m.forward(std::span(kTokens).subspan(p, 1), cache, one);
    ASSERT_EQ(std::memcmp(one.data(), want.data() + p * V, V * 4), 0) << "position " << p;
  }
}

// Two sequences of kTokens at different positions (prompts of 2 and 6 tokens) stepped together
// by forward_batch get `want`'s rows (all_logits of kTokens) bit for bit.
inline void expect_batch_equals(Model& m, const std::vector<float>& want) {
  const int64_t V = m.config().vocab_size;
  const int n = static_cast<int>(kTokens.size());
  const int prompts[2] = {2, 6};
  std::vector<KvCache> caches;
  std::vector<float> one(V), rows(2 * V);
  for (const int p : prompts) {
    caches.push_back(m.new_cache(n));
    m.forward(std::span(kTokens).first(p), caches.back(), one);
  }
  KvCache* ptrs[2] = {&caches[0], &caches[1]};
  for (int step = 0; prompts[1] + step < n; ++step) {
    const int next[2] = {kTokens[prompts[0] + step], kTokens[prompts[1] + step]};
    m.forward_batch(next, ptrs, rows);
    for (int s = 0; s < 2; ++s) {
      ASSERT_EQ(std::memcmp(rows.data() + s * V, want.data() + (prompts[s] + step) * V, V * 4), 0)
          << "sequence " << s << " step " << step;
    }
  }
}

// How far logits b moved from a: the largest |a - b|, and the largest |a| to compare it with.
struct Change {
  double worst = 0, spread = 0;
};
inline Change change(const std::vector<float>& a, const std::vector<float>& b) {
  Change c;
  for (size_t i = 0; i < a.size(); ++i) {
    c.worst = std::max(c.worst, double(std::abs(a[i] - b[i])));
    c.spread = std::max(c.spread, double(std::abs(a[i])));
  }
  return c;
}

}  // namespace tinylm::gpt2::test_tiny
