#include "tinylm/serve/request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "tinylm/core/error.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/serve/api_error.h"
#include "tinylm/serve/chat_template.h"

namespace tinylm::serve {

namespace {

using Json = nlohmann::ordered_json;

Json parse_object(std::string_view body) {
  Json j;
  try {
    j = io::parse_json_strict(body, "the request body");
  } catch (const Error& e) {
    invalid("", e.what());
  }
  if (!j.is_object()) invalid("", "the request body must be a JSON object");
  return j;
}

const Json* field(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

double number(const Json& j, const char* key, double fallback, double lo, double hi,
              bool open_lo = false) {
  const Json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number()) invalid(key, cat("'", key, "' must be a number"));
  const double x = v->get<double>();
  if (!std::isfinite(x) || x > hi || (open_lo ? x <= lo : x < lo)) {
    invalid(key, cat("'", key, "' must be in ", open_lo ? "(" : "[", lo, ", ", hi, "], got ",
                     v->dump()));
  }
  return x;
}

int64_t integer(const Json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const Json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_number_integer()) invalid(key, cat("'", key, "' must be an integer"));
  if (v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(hi)
                              : v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
    invalid(key, cat("'", key, "' must be in [", lo, ", ", hi, "], got ", v->dump()));
  }
  return v->get<int64_t>();
}

bool boolean(const Json& j, const char* key, bool fallback) {
  const Json* v = field(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) invalid(key, cat("'", key, "' must be true or false"));
  return v->get<bool>();
}

void check_model(const Json& j, const ModelInfo& m) {
  const Json* v = field(j, "model");
  if (!v) return;
  if (!v->is_string()) invalid("model", "'model' must be a string");
  if (v->get<std::string>() != m.id) {
    throw ApiError(
        404, "invalid_request_error",
        cat("the model '", v->get<std::string>(), "' does not exist; this server has '", m.id, "'"),
        "model", "model_not_found");
  }
}

// Features tinylm does not have: refused unless given their neutral value, so a request never
// silently means something else.
void check_unsupported(const Json& j) {
  for (const char* key : {"presence_penalty", "frequency_penalty"}) {
    if (number(j, key, 0.0, -2.0, 2.0) != 0.0) invalid(key, cat("'", key, "' is not supported"));
  }
  if (integer(j, "n", 1, 1, 128) != 1) invalid("n", "'n' must be 1 (send one request per choice)");
  if (integer(j, "best_of", 1, 1, 128) != 1) invalid("best_of", "'best_of' must be 1");
  if (const Json* v = field(j, "logit_bias"); v && !(v->is_object() && v->empty()))
    invalid("logit_bias", "'logit_bias' is not supported");
  if (const Json* v = field(j, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
    invalid("suffix", "'suffix' is not supported");
}

std::vector<int> token_ids(const Json& a, const ModelInfo& m, const char* key) {
  std::vector<int> ids;
  for (const Json& t : a) {
    if (!t.is_number_integer()) invalid(key, cat("'", key, "' token ids must be integers"));
    const bool in_range = t.is_number_unsigned()
                              ? t.get<uint64_t>() < uint64_t(m.vocab_size)
                              : t.get<int64_t>() >= 0 && t.get<int64_t>() < m.vocab_size;
    if (!in_range)
      invalid(key,
              cat("token id ", t.dump(), " is outside the vocabulary [0, ", m.vocab_size, ")"));
    ids.push_back(t.get<int>());
  }
  return ids;
}

Prompt text_prompt(const std::string& text, const ModelInfo& m) {
  Prompt p;
  p.text = text;
  try {
    p.ids = m.tokenizer->encode(text, m.allow_special);
  } catch (const Error& e) {
    invalid("prompt", e.what());
  }
  for (const int id : p.ids) {  // a tokenizer larger than the model's vocabulary
    if (id >= m.vocab_size)
      invalid("prompt",
              cat("the text has token ", id, ", outside the model's vocabulary of ", m.vocab_size));
  }
  return p;
}

Prompt id_prompt(std::vector<int> ids, const ModelInfo& m) {
  Prompt p;
  p.ids = std::move(ids);
  for (const int id : p.ids) {
    if (id >= m.tokenizer->vocab_size())
      invalid("prompt", cat("token id ", id, " has no text in the tokenizer"));
  }
  p.text = sanitize_utf8(m.tokenizer->decode(p.ids));
  return p;
}

std::vector<Prompt> prompts(const Json& j, const ModelInfo& m) {
  const Json* v = field(j, "prompt");
  if (!v) invalid("prompt", "'prompt' is required");
  std::vector<Prompt> out;
  if (v->is_string()) {
    out.push_back(text_prompt(v->get<std::string>(), m));
  } else if (v->is_array() && !v->empty() && v->front().is_number()) {
    out.push_back(id_prompt(token_ids(*v, m, "prompt"), m));
  } else if (v->is_array() && !v->empty()) {
    if (v->size() > kMaxPrompts) invalid("prompt", cat("at most ", kMaxPrompts, " prompts"));
    for (const Json& e : *v) {
      if (e.is_string()) {
        out.push_back(text_prompt(e.get<std::string>(), m));
      } else if (e.is_array()) {
        out.push_back(id_prompt(token_ids(e, m, "prompt"), m));
      } else {
        invalid("prompt", "each prompt must be a string or a list of token ids");
      }
    }
  } else {
    invalid("prompt", "'prompt' must be a string, a list of strings or a list of token ids");
  }
  return out;
}

std::vector<std::string> stops(const Json& j) {
  const Json* v = field(j, "stop");
  std::vector<std::string> out;
  if (!v) return out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array() && v->size() <= kMaxStops) {
    for (const Json& s : *v) {
      if (!s.is_string()) invalid("stop", "'stop' must be a string or a list of strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    invalid("stop", cat("'stop' must be a string or a list of up to ", kMaxStops, " strings"));
  }
  for (const std::string& s : out) {
    if (s.empty()) invalid("stop", "stop sequences must not be empty");
    if (sanitize_utf8(s) != s) invalid("stop", "stop sequences must be valid UTF-8");
  }
  return out;
}

GenParams common_params(const Json& j, uint64_t random_seed) {
  GenParams g;
  g.sampling.temperature = number(j, "temperature", 1.0, 0.0, 2.0);
  g.sampling.top_p = number(j, "top_p", 1.0, 0.0, 1.0, true);
  g.sampling.top_k = static_cast<int>(integer(j, "top_k", 0, 0, 1 << 30));
  const Json* seed = field(j, "seed");
  if (seed && !seed->is_number_integer()) invalid("seed", "'seed' must be an integer");
  // Any integer JSON can hold: a negative one stands for its two's complement.
  g.sampling.seed = !seed                        ? random_seed
                    : seed->is_number_unsigned() ? seed->get<uint64_t>()
                                                 : static_cast<uint64_t>(seed->get<int64_t>());
  g.stop = stops(j);
  g.stream = boolean(j, "stream", false);
  g.ignore_eos = boolean(j, "ignore_eos", false);
  if (const Json* o = field(j, "stream_options"); o && !o->is_object())
    invalid("stream_options", "'stream_options' must be an object");
  return g;
}

// Clamps max_tokens per prompt to the room its context leaves, and checks the prompt fits.
void fit_context(CompletionRequest& r, const ModelInfo& m) {
  for (Prompt& p : r.prompts) {
    // As the CLI refuses it: there is nothing to continue.
    if (p.ids.empty()) invalid("prompt", "the prompt is empty");
    const int64_t n = static_cast<int64_t>(p.ids.size());
    if (n > m.context || (n == m.context && r.params.max_tokens > 0)) {
      throw ApiError(400, "invalid_request_error",
                     cat("the prompt has ", n, " tokens; the context of ", m.context,
                         " leaves no room for a completion"),
                     "prompt", "context_length_exceeded");
    }
    p.max_tokens = static_cast<int>(std::min<int64_t>(r.params.max_tokens, m.context - n));
  }
}

}  // namespace

CompletionRequest parse_completion(std::string_view body, const ModelInfo& m,
                                   uint64_t random_seed) {
  const Json j = parse_object(body);
  check_model(j, m);
  check_unsupported(j);
  CompletionRequest r;
  r.params = common_params(j, random_seed);
  r.params.max_tokens = static_cast<int>(integer(j, "max_tokens", 16, 0, 1 << 30));
  r.params.echo = boolean(j, "echo", false);
  r.params.logprobs = static_cast<int>(integer(j, "logprobs", -1, 0, kMaxLogprobs));
  if (r.params.echo && r.params.logprobs >= 0)
    invalid("echo", "'echo' with 'logprobs' is not supported (the prompt's logprobs)");
  r.prompts = prompts(j, m);
  fit_context(r, m);
  return r;
}

CompletionRequest parse_chat(std::string_view body, const ModelInfo& m, uint64_t random_seed) {
  const Json j = parse_object(body);
  check_model(j, m);
  check_unsupported(j);
  const Json* msgs = field(j, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty())
    invalid("messages", "'messages' must be a non-empty list");
  std::vector<ChatMessage> messages;
  for (const Json& msg : *msgs) {
    if (!msg.is_object()) invalid("messages", "each message must be an object");
    const Json* role = field(msg, "role");
    const Json* content = field(msg, "content");
    if (!role || !role->is_string() ||
        (*role != "system" && *role != "user" && *role != "assistant" && *role != "developer")) {
      invalid("messages", "each message needs a 'role' of system, user or assistant");
    }
    if (!content || !content->is_string())
      invalid("messages", "each message needs a 'content' string");
    messages.push_back(
        {*role == "developer" ? "system" : role->get<std::string>(), content->get<std::string>()});
  }
  CompletionRequest r;
  r.chat = true;
  r.params = common_params(j, random_seed);
  const int64_t unlimited = 1 << 30;  // a chat reply runs to the end of the context by default
  r.params.max_tokens = static_cast<int>(integer(
      j, "max_completion_tokens", integer(j, "max_tokens", unlimited, 0, unlimited), 0, unlimited));
  if (boolean(j, "logprobs", false)) {
    r.params.logprobs = static_cast<int>(integer(j, "top_logprobs", 0, 0, kMaxLogprobs));
  } else if (field(j, "top_logprobs")) {
    invalid("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  for (const std::string& s : kChatStops) r.params.stop.push_back(s);
  r.prompts.push_back(text_prompt(render_chat(messages), m));
  fit_context(r, m);
  return r;
}

std::vector<int> parse_tokenize(std::string_view body, const ModelInfo& m) {
  const Json j = parse_object(body);
  const Json* c = field(j, "content");
  if (!c || !c->is_string()) invalid("content", "'content' must be a string");
  return text_prompt(c->get<std::string>(), m).ids;
}

std::vector<int> parse_detokenize(std::string_view body, const ModelInfo& m) {
  const Json j = parse_object(body);
  const Json* t = field(j, "tokens");
  if (!t || !t->is_array()) invalid("tokens", "'tokens' must be a list of token ids");
  std::vector<int> ids = token_ids(*t, m, "tokens");
  for (const int id : ids) {
    if (id >= m.tokenizer->vocab_size())
      invalid("tokens", cat("token id ", id, " has no text in the tokenizer"));
  }
  return ids;
}

}  // namespace tinylm::serve
