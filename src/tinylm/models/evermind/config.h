#pragma once
// EvermindLM hyper-parameters (docs/evermind.md). A sparse LM: per layer a causal depthwise
// conv token mixer and a shared-expert mixture-of-experts channel mixer, tied embeddings.
#include <cstdint>

#include "tinylm/core/param_store.h"

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

// The canonical parameter order (also the EVL0 checkpoint order), shapes [rows, cols]:
//   emb [vocab, d]; per layer l: layers.l.conv [d, K], layers.l.conv_norm [d],
//   layers.l.moe_norm [d], layers.l.router [E, d], layers.l.shared.up [hidden, d],
//   layers.l.shared.down [d, hidden], then for each expert e: layers.l.experts.e.up,
//   layers.l.experts.e.down.
ParamLayout param_layout(const Config& config);

}  // namespace tinylm::evermind
