#pragma once
// The microgpt model API, shared by both engines:
//  - tensor: explicit forward/backward kernels over flat buffers; fast, no per-step allocation
//  - scalar: the scalar autograd graph, operation for operation as microgpt.py; bit-exact
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tinylm/core/param_store.h"
#include "tinylm/models/microgpt/config.h"

namespace tinylm::microgpt {

enum class Engine { tensor, scalar };
Engine parse_engine(std::string_view name);  // "tensor" or "scalar"
std::string_view engine_name(Engine e);

class Model {
 public:
  virtual ~Model() = default;

  const Config& config() const { return config_; }
  // All parameters, flat, in param_layout() order; and their gradients, same layout.
  std::span<double> params() { return params_.flat(); }
  std::span<const double> params() const { return params_.flat(); }
  std::span<double> grads() { return grads_; }
  const ParamLayout& layout() const { return params_.layout(); }
  void zero_grads() { std::fill(grads_.begin(), grads_.end(), 0.0); }

  // Mean next-token cross-entropy over the first n = min(block_size, tokens.size() - 1)
  // transitions of `tokens` (0 when there are none). Token ids must be < vocab_size.
  virtual double loss(std::span<const int> tokens) = 0;
  // The same loss; adds its gradient with respect to every parameter into grads().
  virtual double loss_and_grad(std::span<const int> tokens) = 0;

  // Incremental decoding with a per-layer KV cache: start_sequence() clears it, then each
  // next_logits(token) feeds the token at the next position (at most block_size of them) and
  // returns the logits for the token after it. The span stays valid until the next call.
  virtual void start_sequence() = 0;
  virtual std::span<const double> next_logits(int token) = 0;
  // softmax_at_temperature(next_logits(token), temperature): what microgpt.py samples from.
  std::span<const double> next_probs(int token, double temperature);

 protected:
  explicit Model(const Config& config);
  void check_tokens(std::span<const int> tokens) const;

  Config config_;
  ParamStore<double> params_;
  std::vector<double> grads_;
  std::vector<double> next_probs_;  // next_probs()'s
};

// probs = softmax(logits / temperature) in microgpt.py's arithmetic (each logit times
// temperature**-1, then its softmax): the weights its sampling draws from. probs.size() ==
// logits.size(); temperature > 0.
void softmax_at_temperature(std::span<const double> logits, double temperature,
                            std::span<double> probs);

std::unique_ptr<Model> make_model(const Config& config, Engine engine);

}  // namespace tinylm::microgpt
