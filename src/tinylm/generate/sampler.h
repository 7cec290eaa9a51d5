#pragma once
// Next-token choice from logits: greedy when temperature is 0 (ties to the lowest id), else
// softmax(logits / temperature) restricted to the top_k most likely tokens (0: all) and to
// the smallest set whose probability reaches top_p (1: all), then one draw from a seeded RNG.
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

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  int sample(std::span<const float> logits);

 private:
  SamplingOptions options_;
  PyRandom rng_;
  std::vector<std::pair<float, int>> candidates_, sorted_;
  std::vector<uint64_t> keys_, keys_scratch_;  // (sort order, candidate) for the radix sort
  std::vector<double> weights_;
};

}  // namespace tinylm::generate
