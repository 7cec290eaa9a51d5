#pragma once
// The API's response bodies, shaped as OpenAI's: completions and chat completions, whole or as
// stream chunks, their logprobs and usage, the models list, and error objects.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinylm/serve/api_error.h"
#include "tinylm/serve/engine.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::serve {

using Json = nlohmann::ordered_json;

// The JSON text of j; invalid UTF-8 (a token that splits a character) becomes U+FFFD.
std::string dump(const Json& j);

Json error_body(const ApiError& e);

// Identifies one response: its id, creation time and model, shared by all its chunks.
struct ResponseHead {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  bool chat = false;
};

// What one choice has produced so far, accumulated from its deltas.
struct ChoiceText {
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::vector<int64_t> text_offsets;  // of each logprobs token in text (completions)
  std::string finish_reason;
  int completion_tokens = 0;
  // Appends a delta: its text and logprobs (offsets counted from the token bytes).
  void add(const Delta& d, const BpeTokenizer& tok);
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

// A whole response.
Json completion_body(const ResponseHead& head, const std::vector<ChoiceText>& choices,
                     const Usage& usage, const BpeTokenizer& tok);
// A stream chunk for choice `index`: its new text and logprobs (from `first_logprob` on in
// `choice`), the finish reason when it has one, and usage when given.
Json chunk_body(const ResponseHead& head, int index, const std::string& text,
                const ChoiceText& choice, size_t first_logprob, const std::string& finish_reason,
                const Usage* usage, const BpeTokenizer& tok);
// The last chunk of a stream with stream_options.include_usage: no choices, the usage.
Json usage_chunk(const ResponseHead& head, const Usage& usage);
// The first chunk of a chat stream: the assistant's role.
Json chat_role_chunk(const ResponseHead& head, int index);

}  // namespace tinylm::serve
