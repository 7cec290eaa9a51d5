#pragma once
// GPT-2 as Hugging Face publishes it: pre-LayerNorm blocks, tanh-approximate GELU, learned
// absolute positions, biases everywhere, output head tied to the token embedding.
#include <string>

#include "tinylm/core/param_store.h"

namespace tinylm::gpt2 {

struct Config {
  int vocab_size = 50257;
  int n_positions = 1024;
  int n_embd = 768;
  int n_layer = 12;
  int n_head = 12;
  int n_inner = 0;  // 0: 4 * n_embd
  double layer_norm_epsilon = 1e-5;

  int head_dim() const { return n_embd / n_head; }
  int mlp_dim() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
  void validate() const;  // throws Error naming the first invalid field
};

// Named presets for `tinylm init` and `tinylm train`: "124M" (GPT-2 small), "baby" (nanoGPT's
// 6 layers of 384, 256 positions), "mini" (4 layers of 192, 256 positions) and "small-test".
Config preset(const std::string& name);

// Parameters in Hugging Face order (wte, wpe, h.{i}.ln_1..mlp.c_proj, ln_f), names without
// the "transformer." prefix, Conv1D weights as [in, out]: tensors.h's list (defined there).
// align > 1 starts each tensor at a multiple of align elements (a device's layout).
ParamLayout param_layout(const Config& config, size_t align = 1);

}  // namespace tinylm::gpt2
