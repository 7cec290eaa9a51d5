#pragma once
// Next-token choice from logits: greedy when temperature is 0 (ties to the lowest id), else
// softmax(logits / temperature) restricted to the top_k most likely tokens (0: all) and to
// the smallest set whose probability reaches top_p (1: all), then one draw from a seeded RNG
// (Python's random.choices over the weights, in an order each family fixes: DrawOrder).
#include <cstdint>
#include <span>
#include <vector>

#include "tinylm/core/py_random.h"

namespace tinylm::generate {

struct SamplingOptions {
  double temperature = 0.0;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  void validate() const;  // throws Error on negative temperature, top_k < 0, top_p outside (0, 1]
};

// The sampler interface the generate loop and the server call: one per generation, seeded
// by its options. Logit is the decode interface's (float; microgpt's double).
template <class Logit>
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  virtual int sample(std::span<const Logit> logits) = 0;
};

// The order in which the weights meet random.choices' cumulative sums: the same options draw
// different tokens in another order, so each family keeps the order it was defined with.
enum class DrawOrder {
  // Most likely first (equal logits in id order): GPT-2, and every family with top_k or top_p.
  by_logit,
  // Plain temperature sampling over the whole vocabulary in id order
  // (random.Random(seed).choices(range(V), weights)): EvermindLM's. With top_k or top_p set,
  // by_logit.
  by_id,
};

class Sampler final : public TokenSampler<float> {
 public:
  explicit Sampler(const SamplingOptions& options, DrawOrder order = DrawOrder::by_logit);
  int sample(std::span<const float> logits) override;

 private:
  int sample_by_id(std::span<const float> logits, double mx);

  SamplingOptions options_;
  bool by_id_;  // DrawOrder::by_id applies (a temperature, no top_k, no top_p)
  PyRandom rng_;
  std::vector<std::pair<float, int>> candidates_, sorted_;
  std::vector<uint64_t> keys_, keys_scratch_;  // (sort order, candidate) for the radix sort
  std::vector<double> weights_;
};

}  // namespace tinylm::generate
