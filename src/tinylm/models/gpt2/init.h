#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "tinylm/models/gpt2/config.h"

namespace tinylm::gpt2 {

// Fresh GPT-2 parameters in param_layout order, as GPT-2's paper and Hugging Face initialise
// them: weights N(0, 0.02), the two residual projections (attn.c_proj, mlp.c_proj)
// N(0, 0.02 / sqrt(2 n_layer)), LayerNorm gains 1 and biases 0, linear biases 0. Normals
// come from a counter-based generator keyed by (seed, element index): the same seed gives
// the same weights whatever the thread count.
// progress(done, total), when given, counts parameters set so far, about every million and
// at the end; the values do not depend on it.
std::vector<float> init_params(
    const Config& config, uint64_t seed,
    const std::function<void(int64_t done, int64_t total)>& progress = nullptr);

}  // namespace tinylm::gpt2
