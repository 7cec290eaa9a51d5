#include "tinylm/models/microgpt/config.h"

#include "tinylm/core/error.h"
#include "tinylm/models/microgpt/tensors.h"

namespace tinylm::microgpt {

void Config::validate() const {
  check_positive("microgpt", {{"vocab_size", vocab_size},
                              {"n_embd", n_embd},
                              {"n_head", n_head},
                              {"n_layer", n_layer},
                              {"block_size", block_size}});
  check(n_embd % n_head == 0, "microgpt: n_embd (", n_embd, ") must be divisible by n_head (",
        n_head, ")");
  check(n_embd <= 1 << 16 && block_size <= 1 << 16 && vocab_size <= 1 << 24 && n_layer <= 1024,
        "microgpt: sizes too large for a scalar model");
}

ParamLayout param_layout(const Config& c) {
  c.validate();
  ParamLayout layout;
  ParamIndex unused;
  for_each_tensor(c, unused,
                  [&](const TensorSpec& t, size_t&) { layout.add(t.name, t.shape, t.role); });
  return layout;
}

ParamIndex param_offsets(const Config& c) {
  const ParamLayout layout = param_layout(c);
  ParamIndex index;
  for_each_tensor(c, index,
                  [&](const TensorSpec& t, size_t& offset) { offset = layout.at(t.name).offset; });
  return index;
}

}  // namespace tinylm::microgpt
