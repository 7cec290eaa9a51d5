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

// Plausibility ceilings (docs/limits.md): far above any model this engine trains on a CPU,
// low enough that no product of them overflows and a typo (--d-model 1000000) is an error
// before anything is allocated, trained or written, not a std::bad_alloc or hours of work.
struct Limits {
  static constexpr int64_t vocab_size = int64_t{1} << 20;  // 1,048,576 tokens
  static constexpr int64_t d_model = 16384;
  static constexpr int64_t n_layers = 512;
  static constexpr int64_t conv_kernel = 1024;
  static constexpr int64_t hidden_dim = 65536;
  static constexpr int64_t n_experts = 256;
  static constexpr int64_t params = int64_t{1} << 31;  // 2.1 G parameters (8 GiB in f32)
};

// The parameter count of a config whose sizes are within Limits (no overflow).
int64_t param_count(const Config& config);

// Throws tinylm::Error naming the first invalid field (vocab ≤ 0, non-positive sizes,
// top_k outside 1..n_experts, a size above its Limits ceiling, too many parameters in all).
void validate(const Config& config);

// The canonical parameter order (also the EVL0 checkpoint order), shapes [rows, cols]:
// tensors.h's list (emb [vocab, d], then per layer l: layers.l.conv [d, K], the gains
// layers.l.conv_norm and layers.l.moe_norm [d], layers.l.router [E, d], layers.l.shared.up
// [hidden, d] and .down [d, hidden], each expert e's layers.l.experts.e.up and .down).
ParamLayout param_layout(const Config& config);

}  // namespace tinylm::evermind
