#include "tinylm/models/microgpt/config.h"

#include "tinylm/core/error.h"

namespace tinylm::microgpt {

void Config::validate() const {
  check(vocab_size >= 1, "microgpt: vocab_size must be positive, got ", vocab_size);
  check(n_embd >= 1, "microgpt: n_embd must be positive, got ", n_embd);
  check(n_head >= 1, "microgpt: n_head must be positive, got ", n_head);
  check(n_layer >= 1, "microgpt: n_layer must be positive, got ", n_layer);
  check(block_size >= 1, "microgpt: block_size must be positive, got ", block_size);
  check(n_embd % n_head == 0, "microgpt: n_embd (", n_embd, ") must be divisible by n_head (",
        n_head, ")");
  check(n_embd <= 1 << 16 && block_size <= 1 << 16 && vocab_size <= 1 << 24 && n_layer <= 1024,
        "microgpt: sizes too large for a scalar model");
}

ParamLayout param_layout(const Config& c) {
  c.validate();
  ParamLayout layout;
  const int64_t C = c.n_embd;
  layout.add("wte", {c.vocab_size, C}, ParamRole::embedding);
  layout.add("wpe", {c.block_size, C}, ParamRole::embedding);
  layout.add("lm_head", {c.vocab_size, C});
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "layer" + std::to_string(i) + ".";
    layout.add(p + "attn_wq", {C, C});
    layout.add(p + "attn_wk", {C, C});
    layout.add(p + "attn_wv", {C, C});
    layout.add(p + "attn_wo", {C, C});
    layout.add(p + "mlp_fc1", {4 * C, C});
    layout.add(p + "mlp_fc2", {C, 4 * C});
  }
  return layout;
}

}  // namespace tinylm::microgpt
