#pragma once
#include <vector>

#include "tinylm/core/py_random.h"
#include "tinylm/models/microgpt/model.h"

namespace tinylm::generate {

// One microgpt sample: from BOS at position 0, draw each next token with
// random.choices(weights = softmax(logits / temperature)) until BOS is drawn or block_size
// positions are used. Returns the ids drawn, without the final BOS.
std::vector<int> sample_microgpt(microgpt::Model& model, PyRandom& rng, double temperature,
                                 int bos);

}  // namespace tinylm::generate
