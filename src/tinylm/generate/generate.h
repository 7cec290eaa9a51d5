#pragma once
// The generate loop, one for every family: feed the prompt through the decode interface
// (decode_backend.h), then draw a token from the last logits, check the stop rules, feed it,
// and so on. `tinylm generate` runs it for GPT-2 and EvermindLM, `tinylm microgpt` for its
// samples; the server's continuous batching (serve/engine.h) steps many sequences at once but
// takes each one's tokens with the same Generation::choose.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/generate/decode_backend.h"
#include "tinylm/generate/sampler.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::generate {

// Ceilings (docs/limits.md) for a family with no context end (EvermindLM), which bound a run
// instead.
inline constexpr int kMaxNewTokens = 1 << 20;
inline constexpr int kMaxPromptTokens = 1 << 20;

struct GenerateOptions {
  int max_tokens = 64;       // new tokens at most (0..kMaxNewTokens without a context end)
  SamplingOptions sampling;  // temperature (0: greedy), top_k, top_p, seed
  int eos_id = -1;           // the end-of-text token (-1: none)
  bool ignore_eos = false;   // end-of-text is drawn like any token and does not stop
  // Past the context's end, each new token sees the last `context` tokens, fed again at the
  // first positions (nanoGPT's sample.py crops its input so: a prefill of the whole context
  // per token); otherwise the context's end stops the generation (learned positions do not
  // shift).
  bool slide = false;
  // Positions the prompt and the new tokens may fill, at most the model's (llama.cpp's -c);
  // 0: the model's.
  int context = 0;
  // The context in use for a model of `model_limit` positions (0: none).
  int context_for(int model_limit) const {
    return context > 0 && (model_limit == 0 || context < model_limit) ? context : model_limit;
  }
  // The end-of-text rule: drawing this token ends the generation; it counts as generated but
  // is not part of the new ids and has no text.
  bool ends_text(int token) const { return token == eos_id && eos_id >= 0 && !ignore_eos; }
};

// Throws generate()'s one-line Error for a prompt or options it would refuse (an empty prompt,
// an id outside the vocabulary, a prompt longer than the context (or kMaxPromptTokens),
// max_tokens out of range, the end-of-text id or sampling options out of range), so a caller
// can check before it prints anything.
void check_generate_inputs(int vocab_size, int context_limit, std::span<const int> prompt,
                           const GenerateOptions& options);

// What ended a generation, checked in this order after each token.
enum class Stop { none, end_of_text, max_tokens, context_end };

// One sequence's token choice and stop rules, the step the loop and a server slot share: the
// family's sampler, the tokens drawn so far, and what ends the generation.
template <class Logit>
class Generation {
 public:
  Generation(const BasicDecodeBackend<Logit>& backend, const GenerateOptions& options,
             int64_t prompt_tokens)
      : options_(options),
        sampler_(backend.sampler(options.sampling)),
        positions_(prompt_tokens),
        context_limit_(options.slide ? 0 : options.context_for(backend.context_limit())) {}
  // Draws the next token from the logits of the last position fed; stop() then says whether
  // it ends the generation. (Touches only this generation: a server chooses for its slots in
  // parallel.)
  int choose(std::span<const Logit> logits) {
    const int token = sampler_->sample(logits);
    ++generated_;
    if (options_.ends_text(token))
      stop_ = Stop::end_of_text;
    else if (generated_ >= options_.max_tokens)
      stop_ = Stop::max_tokens;
    else if (context_limit_ > 0 && positions_ + generated_ - 1 >= context_limit_)
      stop_ = Stop::context_end;  // learned positions: no shifting past the end
    return token;
  }
  Stop stop() const { return stop_; }
  int generated() const { return generated_; }  // tokens drawn, an end-of-text included

 private:
  GenerateOptions options_;
  std::unique_ptr<TokenSampler<Logit>> sampler_;
  int64_t positions_;  // the prompt's
  int context_limit_;
  int generated_ = 0;
  Stop stop_ = Stop::none;
};

struct GenerateResult {
  std::vector<int> ids;  // the new tokens, without the prompt and without an end-of-text
  bool stopped_at_eos = false;
  bool hit_context_end = false;  // the context was full before max_tokens
  double prefill_ms = 0, decode_ms = 0;
  // New tokens drawn, an end-of-text included.
  size_t generated() const { return ids.size() + (stopped_at_eos ? 1 : 0); }
};

// Generates after `prompt` (checked by check_generate_inputs). on_token(id) sees each token as
// it is drawn (an end-of-text included); returning false ends generation after it.
template <class Logit>
GenerateResult generate(BasicDecodeBackend<Logit>& backend, std::span<const int> prompt,
                        const GenerateOptions& options,
                        const std::function<bool(int)>& on_token = {});

struct GeneratedText : GenerateResult {
  std::string text;  // the new tokens decoded (invalid UTF-8 replaced)
};

// The same with the new tokens decoded by `tokenizer`: on_text receives the text as it becomes
// complete UTF-8.
GeneratedText generate_text(DecodeBackend& backend, const BpeTokenizer& tokenizer,
                            std::span<const int> prompt, const GenerateOptions& options,
                            const std::function<void(std::string_view)>& on_text = {},
                            const std::function<bool(int)>& on_token = {});

}  // namespace tinylm::generate
