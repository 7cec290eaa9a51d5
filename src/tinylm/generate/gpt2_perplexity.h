#pragma once
// Perplexity of a token sequence under a GPT-2 model: perplexity.h's sliding windows, each
// one batched forward.
#include <functional>
#include <span>

#include "tinylm/generate/perplexity.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::generate {

// window_perplexity's windows (context <= n_positions); each window is one batched forward
// (the prefill path) that computes logits only for the positions it scores.
PerplexityResult perplexity(gpt2::Model& model, std::span<const int> tokens, int context,
                            int stride,
                            const std::function<void(int64_t, int64_t)>& on_window = {});

}  // namespace tinylm::generate
