#pragma once
// EvermindLM hyper-parameters (docs/evermind.md). A sparse LM: per layer a causal depthwise
// conv token mixer and a shared-expert mixture-of-experts channel mixer, tied embeddings.
#include <cstdint>

namespace tinylm::evermind {

struct Config {
  int64_t vocab_size = 0;  // required
  int64_t d_model = 64;
  int64_t n_layers = 2;
  int64_t conv_kernel = 3;
  int64_t hidden_dim = 128;  // 2 · d_model by default
  int64_t n_experts = 4;
  int64_t top_k = 2;
  uint64_t seed = 0;
};

// Throws tinylm::Error naming the first invalid field (vocab ≤ 0, non-positive sizes,
// top_k outside 1..n_experts).
void validate(const Config& config);

}  // namespace tinylm::evermind
