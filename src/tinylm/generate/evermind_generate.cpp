#include "tinylm/generate/evermind_generate.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/py_random.h"
#include "tinylm/generate/sampler.h"
#include "tinylm/models/evermind/decoder.h"

namespace tinylm::generate {

EvermindGenerateResult generate(const evermind::Model<float>& model, std::span<const int> prompt,
                                const EvermindGenerateOptions& options,
                                const std::function<bool(int)>& on_token) {
  check(!prompt.empty(), "evermind generate: the prompt needs at least one token");
  check(options.max_new_tokens >= 0 && options.max_new_tokens <= kEvermindMaxNewTokens,
        "evermind generate: max-tokens must be in 0..", kEvermindMaxNewTokens, " (got ",
        options.max_new_tokens, ")");
  check(static_cast<int64_t>(prompt.size()) <= kEvermindMaxPromptTokens,
        "evermind generate: the prompt has ", prompt.size(), " tokens, more than ",
        kEvermindMaxPromptTokens);
  check(options.stop_token < model.config().vocab_size, "evermind generate: stop token ",
        options.stop_token, " is outside the vocabulary [0, ", model.config().vocab_size, ")");
  SamplingOptions sampling;
  sampling.temperature = options.temperature > 0.0 ? options.temperature : 0.0;
  sampling.top_k = options.top_k;
  sampling.top_p = options.top_p;
  sampling.seed = options.seed;
  EvermindSampler sampler(sampling, model.config().vocab_size);  // validates top_k / top_p

  evermind::Decoder<float> decoder(model);
  std::span<const float> logits;
  for (const int t : prompt) logits = decoder.step(t);
  EvermindGenerateResult result;
  for (int64_t i = 0; i < options.max_new_tokens; ++i) {
    const int next = sampler.sample(logits);
    const bool more = on_token ? on_token(next) : true;
    if (next == options.stop_token) {
      result.stopped = true;
      break;
    }
    result.tokens.push_back(next);
    if (!more || i + 1 == options.max_new_tokens) break;
    logits = decoder.step(next);
  }
  return result;
}

EvermindSampler::EvermindSampler(const SamplingOptions& options, int64_t vocab_size)
    : options_(options),
      sampler_(options),
      rng_(options.seed),
      plain_(options.temperature > 0.0 && options.top_k == 0 && options.top_p >= 1.0) {
  if (plain_) weights_.resize(static_cast<size_t>(vocab_size));
}

int EvermindSampler::sample(std::span<const float> logits) {
  if (!plain_) return sampler_.sample(logits);
  check(logits.size() == weights_.size(), "evermind sampler: ", logits.size(),
        " logits for a vocabulary of ", weights_.size());
  const float mx = *std::max_element(logits.begin(), logits.end());
  for (size_t v = 0; v < logits.size(); ++v) {
    weights_[v] = std::exp((static_cast<double>(logits[v]) - mx) / options_.temperature);
  }
  return static_cast<int>(rng_.choices(weights_));
}

std::vector<int> prompt_ids(const evermind::Model<float>& model, const BpeTokenizer& tokenizer,
                            std::string_view prompt, const EvermindGenerateOptions& options) {
  check(tokenizer.vocab_size() <= model.config().vocab_size, "evermind generate: the tokenizer's ",
        tokenizer.vocab_size(), " tokens do not fit the model's vocabulary of ",
        model.config().vocab_size);
  check(!prompt.empty(), "generate: the prompt is empty (give at least one token)");
  check(static_cast<int64_t>(prompt.size()) <= 16 * kEvermindMaxPromptTokens,
        "evermind generate: the prompt has ", prompt.size(), " bytes, more than ",
        16 * kEvermindMaxPromptTokens);
  std::vector<int> ids = tokenizer.encode(prompt, true);
  check(!ids.empty(), "generate: the prompt is empty (give at least one token)");
  check(static_cast<int64_t>(ids.size()) <= kEvermindMaxPromptTokens,
        "evermind generate: the prompt has ", ids.size(), " tokens, more than ",
        kEvermindMaxPromptTokens);
  check(options.max_new_tokens >= 0 && options.max_new_tokens <= kEvermindMaxNewTokens,
        "evermind generate: max-tokens must be in 0..", kEvermindMaxNewTokens, " (got ",
        options.max_new_tokens, ")");
  check(options.stop_token < model.config().vocab_size, "evermind generate: stop token ",
        options.stop_token, " is outside the vocabulary [0, ", model.config().vocab_size, ")");
  return ids;
}

std::string generate_text(const evermind::Model<float>& model, const BpeTokenizer& tokenizer,
                          std::string_view prompt, const EvermindGenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text) {
  const std::vector<int> ids = prompt_ids(model, tokenizer, prompt, options);
  StreamDecoder stream(tokenizer);
  std::string text;
  const auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    text += piece;
    if (on_text) on_text(piece);
  };
  generate(model, ids, options, [&](int id) {
    if (id != options.stop_token) emit(stream.push(id));
    return true;
  });
  emit(stream.finish());
  return text;
}

}  // namespace tinylm::generate
