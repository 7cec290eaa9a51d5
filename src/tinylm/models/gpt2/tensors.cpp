#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

std::vector<TensorSpec> tensor_specs(const Config& config) {
  std::vector<TensorSpec> specs;
  Offsets unused;
  for_each_tensor(config, unused, [&](const TensorSpec& t, size_t&, auto) { specs.push_back(t); });
  return specs;
}

ParamLayout param_layout(const Config& config, size_t align) {
  config.validate();
  ParamLayout layout(align);
  Offsets unused;
  for_each_tensor(config, unused,
                  [&](const TensorSpec& t, size_t&, auto) { layout.add(t.name, t.shape, t.role); });
  return layout;
}

Offsets param_offsets(const Config& config, size_t align) {
  const ParamLayout layout = param_layout(config, align);
  Offsets offsets;
  for_each_tensor(config, offsets, [&](const TensorSpec& t, size_t& offset, auto) {
    offset = layout.at(t.name).offset;
  });
  return offsets;
}

}  // namespace tinylm::gpt2
