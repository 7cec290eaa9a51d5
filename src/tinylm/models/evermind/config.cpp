#include "tinylm/models/evermind/config.h"

#include <string>

#include "tinylm/core/error.h"
#include "tinylm/models/evermind/tensors.h"

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
  const auto at_most = [](int64_t v, int64_t limit, const char* name) {
    check(v <= limit, "evermind config: ", name, " ", v, " is implausibly large (at most ", limit,
          "; see docs/limits.md)");
  };
  at_most(c.vocab_size, Limits::vocab_size, "vocab_size");
  at_most(c.d_model, Limits::d_model, "d_model");
  at_most(c.n_layers, Limits::n_layers, "n_layers");
  at_most(c.conv_kernel, Limits::conv_kernel, "conv_kernel");
  at_most(c.hidden_dim, Limits::hidden_dim, "hidden_dim");
  at_most(c.n_experts, Limits::n_experts, "n_experts");
  const int64_t n = param_count(c);
  check(n <= Limits::params, "evermind config: ", n, " parameters are implausibly many (at most ",
        Limits::params, "; see docs/limits.md)");
}

int64_t param_count(const Config& c) {
  // Each factor is below 2^20 and the per-layer count below 2^44: no overflow.
  const int64_t per_layer = c.d_model * c.conv_kernel + 2 * c.d_model + c.n_experts * c.d_model +
                            (c.n_experts + 1) * 2 * c.hidden_dim * c.d_model;
  return c.vocab_size * c.d_model + c.n_layers * per_layer;
}

ParamLayout param_layout(const Config& c) {
  validate(c);
  ParamLayout layout;
  ParamIndex unused;
  for_each_tensor(c, unused,
                  [&](const TensorSpec& t, size_t&) { layout.add(t.name, t.shape, t.role); });
  return layout;
}

}  // namespace tinylm::evermind
