#pragma once
// Text generation and perplexity with a GPT-2 model: prefill the prompt in one batched
// forward, then decode one token at a time against the KV cache.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tinylm/generate/sampler.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::generate {

struct GenerateOptions {
  int max_tokens = 64;
  int eos_id = -1;  // stop when this token is produced (-1: never)
  SamplingOptions sampling;
};

struct GenerateResult {
  std::vector<int> ids;  // the generated tokens (not the prompt)
  bool stopped_at_eos = false;
  bool hit_context_end = false;  // n_positions reached before max_tokens
  double prefill_ms = 0, decode_ms = 0;
};

// Throws generate()'s one-line Error for a prompt or options it would refuse (an empty
// prompt, more tokens than the model's context, negative max_tokens, the eos id or sampling
// options out of range), so a caller can check before it prints anything.
void check_generate_inputs(const gpt2::Config& config, std::span<const int> prompt,
                           const GenerateOptions& options);

// Calls on_token(id) for each generated token as it is produced; returning false stops.
GenerateResult generate(gpt2::Model& model, std::span<const int> prompt,
                        const GenerateOptions& options,
                        const std::function<bool(int)>& on_token = {});

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
