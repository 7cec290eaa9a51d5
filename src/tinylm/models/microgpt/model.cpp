#include "tinylm/models/microgpt/model.h"

#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"
#include "tinylm/core/py_math.h"
#include "tinylm/kernels/activation/softmax.h"

namespace tinylm::microgpt {

std::unique_ptr<Model> make_tensor_model(const Config& config);
std::unique_ptr<Model> make_scalar_model(const Config& config);

namespace {
constexpr EnumName<Engine> kEngineNames[] = {{Engine::tensor, "tensor"},
                                             {Engine::scalar, "scalar"}};
}  // namespace

Engine parse_engine(std::string_view name) { return parse_of(kEngineNames, name, "engine"); }

std::string_view engine_name(Engine e) { return name_of(kEngineNames, e); }

Model::Model(const Config& config)
    : config_(config), params_(param_layout(config)), grads_(params_.flat().size(), 0.0) {}

void Model::check_tokens(std::span<const int> tokens) const {
  for (int t : tokens) {
    check(t >= 0 && t < config_.vocab_size, "microgpt: token id ", t,
          " outside the vocabulary [0, ", config_.vocab_size, ")");
  }
}

std::span<const double> Model::next_probs(int token, double temperature) {
  const std::span<const double> logits = next_logits(token);
  next_probs_.resize(logits.size());
  softmax_at_temperature(logits, temperature, next_probs_);
  return next_probs_;
}

void softmax_at_temperature(std::span<const double> logits, double temperature,
                            std::span<double> probs) {
  const double inv_temp = py_pow(temperature, -1.0);  // microgpt.py: l / temperature
  for (size_t i = 0; i < logits.size(); ++i) probs[i] = logits[i] * inv_temp;
  kernels::softmax_forward(probs.data(), probs.data(), static_cast<int64_t>(probs.size()));
}

std::unique_ptr<Model> make_model(const Config& config, Engine engine) {
  config.validate();
  return engine == Engine::tensor ? make_tensor_model(config) : make_scalar_model(config);
}

}  // namespace tinylm::microgpt
