#include "tinylm/models/microgpt/model.h"

#include "tinylm/core/error.h"

namespace tinylm::microgpt {

std::unique_ptr<Model> make_tensor_model(const Config& config);
std::unique_ptr<Model> make_scalar_model(const Config& config);

Engine parse_engine(std::string_view name) {
  if (name == "tensor") return Engine::tensor;
  if (name == "scalar") return Engine::scalar;
  fail("unknown engine '", name, "' (expected tensor or scalar)");
}

std::string_view engine_name(Engine e) { return e == Engine::tensor ? "tensor" : "scalar"; }

Model::Model(const Config& config)
    : config_(config), params_(param_layout(config)), grads_(params_.flat().size(), 0.0) {}

void Model::check_tokens(std::span<const int> tokens) const {
  for (int t : tokens) {
    check(t >= 0 && t < config_.vocab_size, "microgpt: token id ", t,
          " outside the vocabulary [0, ", config_.vocab_size, ")");
  }
}

std::unique_ptr<Model> make_model(const Config& config, Engine engine) {
  config.validate();
  return engine == Engine::tensor ? make_tensor_model(config) : make_scalar_model(config);
}

}  // namespace tinylm::microgpt
