#include "tinylm/models/evermind/config.h"

#include "tinylm/core/error.h"

namespace tinylm::evermind {

void validate(const Config& c) {
  check(c.vocab_size > 0, "evermind config: vocab_size must be positive (got ", c.vocab_size, ")");
  check(c.d_model > 0, "evermind config: d_model must be positive (got ", c.d_model, ")");
  check(c.n_layers > 0, "evermind config: n_layers must be positive (got ", c.n_layers, ")");
  check(c.conv_kernel > 0, "evermind config: conv_kernel must be positive (got ", c.conv_kernel, ")");
  check(c.hidden_dim > 0, "evermind config: hidden_dim must be positive (got ", c.hidden_dim, ")");
  check(c.n_experts > 0, "evermind config: n_experts must be positive (got ", c.n_experts, ")");
  check(c.top_k >= 1 && c.top_k <= c.n_experts, "evermind config: top_k must be in 1..n_experts = ",
        c.n_experts, " (got ", c.top_k, ")");
}

}  // namespace tinylm::evermind
