#pragma once
// Text generation with EvermindLM: the prompt goes through the incremental decoder token by
// token (models/evermind/decoder.h: O(1) state per layer, the same logits as a full
// forward), then each new token is chosen from the logits of the last one.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/generate/sampler.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::generate {

// Ceilings (docs/limits.md): EvermindLM has no context end, so these bound a run instead.
inline constexpr int64_t kEvermindMaxNewTokens = int64_t{1} << 20;
inline constexpr int64_t kEvermindMaxPromptTokens = int64_t{1} << 20;

struct EvermindGenerateOptions {
  int64_t max_new_tokens = 128;  // 0..kEvermindMaxNewTokens
  // <= 0: greedy (the highest logit, ties to the lowest id). > 0: a draw from
  // softmax(logits / temperature): Python's random.Random(seed).choices(range(V), weights)
  // over the tokens in id order; with top_k / top_p set, generate::Sampler's draw over
  // the tokens sorted by logit, restricted to the top_k / the top_p nucleus.
  double temperature = 0.0;
  int top_k = 0;        // 0: all tokens
  double top_p = 1.0;   // 1: no nucleus cut
  uint64_t seed = 0;    // of the sampling RNG
  int stop_token = -1;  // generation ends when this token is drawn (it is not returned); < 0: none
};

// The choice of the next token described at EvermindGenerateOptions (options.temperature
// >= 0; 0: greedy). Plain temperature sampling skips the Sampler's sort of the whole
// vocabulary per token.
class EvermindSampler {
 public:
  EvermindSampler(const SamplingOptions& options, int64_t vocab_size);
  int sample(std::span<const float> logits);

 private:
  SamplingOptions options_;
  Sampler sampler_;
  PyRandom rng_;
  bool plain_;
  std::vector<double> weights_;
};

struct EvermindGenerateResult {
  std::vector<int> tokens;  // the new tokens, without the prompt (and without the stop token)
  bool stopped = false;     // the stop token was drawn
};

// Generates after `prompt` (at least one token). on_token(id) sees each new token as it is
// chosen (the stop token included); returning false ends generation after it.
EvermindGenerateResult generate(const evermind::Model<float>& model, std::span<const int> prompt,
                                const EvermindGenerateOptions& options,
                                const std::function<bool(int)>& on_token = {});

// The prompt's ids (encoded with `tokenizer`, special tokens allowed) after every check
// generate_text makes: the tokenizer fits the model, the prompt is not empty (as with GPT-2)
// and within kEvermindMaxPromptTokens, the options are in range. Throws a one-line Error, so
// a caller can check before it prints anything.
std::vector<int> prompt_ids(const evermind::Model<float>& model, const BpeTokenizer& tokenizer,
                            std::string_view prompt, const EvermindGenerateOptions& options);

// Text in, text out: the prompt is encoded with `tokenizer` (special tokens allowed; see
// prompt_ids) and the new tokens decoded; on_text receives the text as it becomes complete
// UTF-8.
std::string generate_text(const evermind::Model<float>& model, const BpeTokenizer& tokenizer,
                          std::string_view prompt, const EvermindGenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text = {});

}  // namespace tinylm::generate
