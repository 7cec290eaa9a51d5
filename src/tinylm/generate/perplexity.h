#pragma once
// Perplexity of a token sequence by Hugging Face's sliding windows, for any family: the windows
// and the scoring are here once; a family gives the logits of a window's scored positions
// (GPT-2: one batched forward, gpt2_perplexity.h; any other: its decode interface).
#include <cstdint>
#include <functional>
#include <span>

#include "tinylm/generate/decode_backend.h"

namespace tinylm::generate {

struct PerplexityResult {
  double nll_sum = 0;
  int64_t count = 0;           // tokens scored
  int64_t forward_tokens = 0;  // tokens run through the model (windows overlap)
  double forward_ms = 0;       // in the windows' forwards and log-softmax
  double mean_nll() const { return count ? nll_sum / static_cast<double>(count) : 0.0; }
  double perplexity() const;
};

// Fills `logits` (rows x vocabulary) with the logits of window positions first_row.. of
// `inputs`, a window's tokens run from position 0.
using WindowLogits =
    std::function<void(std::span<const int> inputs, int64_t first_row, std::span<float> logits)>;

// Sliding windows of `context` tokens advanced by `stride` (Hugging Face's method): each
// window scores only the targets after the previous window's end, so every token from the
// second on is scored once, with up to context - stride tokens of left context (at stride ==
// context a window's first token is only context, as in Hugging Face's loop); a target's
// score is -log softmax(logits)[target]. `limit`: the model's positions (0: no end), which
// `context` may not pass. on_window(scored, total) is called after each window (total =
// tokens.size() - 1).
PerplexityResult window_perplexity(std::span<const int> tokens, int context, int stride, int limit,
                                   int vocab_size, const WindowLogits& window_logits,
                                   const std::function<void(int64_t, int64_t)>& on_window = {});

// The same through the decode interface: each window a fresh sequence, fed up to its first
// scored position, then one token a step (EvermindLM, microgpt; a model whose decoder is
// row-invariant scores what its full forward would).
PerplexityResult perplexity(DecodeBackend& backend, std::span<const int> tokens, int context,
                            int stride,
                            const std::function<void(int64_t, int64_t)>& on_window = {});

}  // namespace tinylm::generate
