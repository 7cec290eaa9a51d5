#include "tinylm/models/evermind/config.h"

#include <string>

#include "tinylm/core/error.h"
#include "tinylm/models/evermind/tensors.h"

namespace tinylm::evermind {

void validate(const Config& c) {
  check_positive("evermind config", {{"vocab_size", c.vocab_size},
                                     {"d_model", c.d_model},
                                     {"n_layers", c.n_layers},
                                     {"conv_kernel", c.conv_kernel},
                                     {"hidden_dim", c.hidden_dim},
                                     {"n_experts", c.n_experts}});
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
