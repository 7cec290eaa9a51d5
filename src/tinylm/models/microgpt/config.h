#pragma once
// microgpt: Karpathy's character-level GPT (rmsnorm without gain, ReLU MLP, no biases,
// untied head), trained one document at a time. Double precision throughout, like Python.
#include <cstddef>
#include <string_view>

#include "tinylm/core/param_store.h"

namespace tinylm::microgpt {

struct Config {
  int vocab_size = 27;
  int n_embd = 16;
  int n_head = 4;
  int n_layer = 1;
  int block_size = 16;

  int head_dim() const { return n_embd / n_head; }
  int mlp_dim() const { return 4 * n_embd; }
  // Throws Error naming the first invalid field.
  void validate() const;
};

// Canonical parameter order, as microgpt.py's state_dict: tensors.h's list (wte, wpe, lm_head,
// then per layer i: layer{i}.attn_wq/wk/wv/wo, layer{i}.mlp_fc1, layer{i}.mlp_fc2). Every
// matrix is [out][in], row-major.
ParamLayout param_layout(const Config& config);

}  // namespace tinylm::microgpt
