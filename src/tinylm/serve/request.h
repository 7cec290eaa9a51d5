#pragma once
// The bodies of the API's requests, parsed and checked: every field of the right JSON type,
// every number finite and in range, every token id in the vocabulary, and max_tokens clamped
// so that prompt + completion fit the context; fields whose effect tinylm does not have are
// refused unless they hold their neutral value (docs/serve.md lists both). Anything else is an
// ApiError (400, naming the parameter), raised before any work is queued.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/generate/logit_processors.h"
#include "tinylm/generate/sampler.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::serve {

// What the parser needs to know about the served model.
struct ModelInfo {
  std::string id;                    // the model's name in the API, in every response
  std::vector<std::string> aliases;  // more names for it in GET /v1/models (--alias)
  const BpeTokenizer* tokenizer = nullptr;
  int vocab_size = 0;          // of the model (ids must be below it)
  int context = 0;             // positions per request: prompt + completion
  int eos_id = -1;             // generation stops at it (-1: none)
  bool allow_special = false;  // special tokens in prompt text are recognized
  int start_id = -1;  // put before every text prompt (-1: none): microgpt's documents start so
};

// At most this many prompts in one request, choices (prompts x n), and stop sequences per
// request.
inline constexpr size_t kMaxPrompts = 64;
inline constexpr size_t kMaxChoices = 64;
inline constexpr size_t kMaxStops = 4;
inline constexpr int kMaxLogprobs = 5;

struct GenParams {
  int max_tokens = 16;                 // requested; each Choice clamps it to its prompt's room
  generate::SamplingOptions sampling;  // choice i of a prompt: seed + i
  generate::LogitPenalties penalties;  // frequency/presence/repetition penalties, logit_bias
  int n = 1;                           // choices per prompt
  std::vector<std::string> stop;
  int logprobs = -1;  // alternatives per token to report; -1: no logprobs
  bool echo = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with only usage
  bool ignore_eos = false;     // llama.cpp's extension: end-of-text does not end the choice
};

struct Prompt {
  std::vector<int> ids;
  std::string text;    // as given, or decoded from the ids (for echo)
  int max_tokens = 0;  // GenParams::max_tokens clamped to context - ids.size()
};

struct CompletionRequest {
  bool chat = false;
  std::vector<Prompt> prompts;  // one choice each
  GenParams params;
};

// POST /v1/completions. `random_seed` is the seed used when the body has none.
CompletionRequest parse_completion(std::string_view body, const ModelInfo& model,
                                   uint64_t random_seed);
// POST /v1/chat/completions: the messages rendered by render_chat (chat_template.h).
CompletionRequest parse_chat(std::string_view body, const ModelInfo& model, uint64_t random_seed);
// POST /tokenize {"content": "..."} -> the ids.
std::vector<int> parse_tokenize(std::string_view body, const ModelInfo& model);
// POST /detokenize {"tokens": [...]} -> the ids (each checked against the vocabulary).
std::vector<int> parse_detokenize(std::string_view body, const ModelInfo& model);

}  // namespace tinylm::serve
