#pragma once
// Perplexity of a token sequence under a GPT-2 model, by sliding windows of batched forwards.
#include <functional>
#include <span>

#include "tinylm/models/gpt2/model.h"

namespace tinylm::generate {

struct PerplexityResult {
  double nll_sum = 0;
  int64_t count = 0;           // tokens scored
  int64_t forward_tokens = 0;  // tokens run through the model (windows overlap)
  double forward_ms = 0;       // in the windows' forwards and log-softmax
  double mean_nll() const { return count ? nll_sum / static_cast<double>(count) : 0.0; }
  double perplexity() const;
};

// Sliding windows of `context` tokens advanced by `stride` (Hugging Face's method): each
// window scores only the targets after the previous window's end, so every token from the
// second on is scored once, with up to context - stride tokens of left context. Each window
// is one batched forward (the prefill path) that computes logits only for the positions it
// scores. on_window(scored, total) is called after each window (total = tokens.size() - 1).
PerplexityResult perplexity(gpt2::Model& model, std::span<const int> tokens, int context,
                            int stride,
                            const std::function<void(int64_t, int64_t)>& on_window = {});

}  // namespace tinylm::generate
