#include "tinylm/models/evermind/config.h"

#include <string>

#include "tinylm/core/error.h"

namespace tinylm::evermind {

void validate(const Config& c) {
  check(c.vocab_size > 0, "evermind config: vocab_size must be positive (got ", c.vocab_size, ")");
  check(c.d_model > 0, "evermind config: d_model must be positive (got ", c.d_model, ")");
  check(c.n_layers > 0, "evermind config: n_layers must be positive (got ", c.n_layers, ")");
  check(c.conv_kernel > 0, "evermind config: conv_kernel must be positive (got ", c.conv_kernel,
        ")");
  check(c.hidden_dim > 0, "evermind config: hidden_dim must be positive (got ", c.hidden_dim, ")");
  check(c.n_experts > 0, "evermind config: n_experts must be positive (got ", c.n_experts, ")");
  check(c.top_k >= 1 && c.top_k <= c.n_experts,
        "evermind config: top_k must be in 1..n_experts = ", c.n_experts, " (got ", c.top_k, ")");
}

ParamLayout param_layout(const Config& c) {
  validate(c);
  ParamLayout layout;
  layout.add("emb", {c.vocab_size, c.d_model}, ParamRole::embedding);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = cat("layers.", l, ".");
    layout.add(p + "conv", {c.d_model, c.conv_kernel});
    layout.add(p + "conv_norm", {c.d_model}, ParamRole::norm);
    layout.add(p + "moe_norm", {c.d_model}, ParamRole::norm);
    layout.add(p + "router", {c.n_experts, c.d_model});
    layout.add(p + "shared.up", {c.hidden_dim, c.d_model});
    layout.add(p + "shared.down", {c.d_model, c.hidden_dim});
    for (int64_t e = 0; e < c.n_experts; ++e) {
      layout.add(cat(p, "experts.", e, ".up"), {c.hidden_dim, c.d_model});
      layout.add(cat(p, "experts.", e, ".down"), {c.d_model, c.hidden_dim});
    }
  }
  return layout;
}

}  // namespace tinylm::evermind
