#pragma once
// The tiny GPT-2 fixture (tests/fixtures/gpt2/tiny: 2 layers, n_embd 64, vocabulary 1000) and a
// forward over it, for the tests of its storage and activation types.
#include <span>
#include <vector>

#include "test_util.h"
#include "tinylm/models/gpt2/model.h"
#include "tinylm/train/gpt2_checkpoint.h"

namespace tinylm::gpt2::test_tiny {

inline train::Gpt2Checkpoint checkpoint() {
  return train::load_gpt2(test::source_path("tests/fixtures/gpt2/tiny/model.safetensors"),
                          test::source_path("tests/fixtures/gpt2/tiny/config.json"));
}

// Every position's logits of `tokens` run as one prompt: (tokens.size(), vocab).
inline std::vector<float> all_logits(Model& m, std::span<const int> tokens) {
  KvCache cache = m.new_cache(static_cast<int>(tokens.size()));
  std::vector<float> logits(tokens.size() * m.config().vocab_size);
  m.forward(tokens, cache, logits, true);
  return logits;
}

inline const std::vector<int> kTokens = {5, 17, 999, 0, 3, 250, 251, 7, 7, 7, 42, 600, 13};

}  // namespace tinylm::gpt2::test_tiny
