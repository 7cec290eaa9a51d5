#include "tinylm/generate/microgpt_sample.h"

#include "tinylm/core/error.h"

namespace tinylm::generate {

std::vector<int> sample_microgpt(microgpt::Model& model, PyRandom& rng, double temperature,
                                 int bos) {
  check(temperature > 0.0, "temperature must be positive, got ", temperature);
  std::vector<int> out;
  model.start_sequence();
  int token = bos;
  for (int pos = 0; pos < model.config().block_size; ++pos) {
    token = static_cast<int>(rng.choices(model.next_probs(token, temperature)));
    if (token == bos) break;
    out.push_back(token);
  }
  return out;
}

}  // namespace tinylm::generate
