#include "tinylm/serve/request.h"

#include <algorithm>
#include <charconv>
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
  // (A non-negative JSON integer is unsigned: it may exceed int64_t, and must still meet lo.)
  const bool out_of_range = v->is_number_unsigned()
                                ? v->get<uint64_t>() > static_cast<uint64_t>(hi) ||
                                      (lo > 0 && v->get<uint64_t>() < static_cast<uint64_t>(lo))
                                : v->get<int64_t>() < lo || v->get<int64_t>() > hi;
  if (out_of_range) {
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

// One model is served: any `model` a client names is served by it, as llama-server does (chat
// front-ends send their own default, such as gpt-4o-mini), and answered with its id.
void check_model(const Json& j) {
  if (const Json* v = field(j, "model"); v && !v->is_string())
    invalid("model", "'model' must be a string");
}

bool is_zero(const Json& v) { return v.is_number() && v.get<double>() == 0.0; }
bool is_one(const Json& v) { return v.is_number() && v.get<double>() == 1.0; }
bool is_empty(const Json& v) {
  // (nlohmann's empty() is false for every string.)
  return v.is_string() ? v.get_ref<const std::string&>().empty()
                       : (v.is_array() || v.is_object()) && v.empty();
}

// Fields whose effect tinylm does not have, and the value that asks for no effect: any other
// value is refused by name, so a request never silently means something else. (Fields that
// change nothing, such as user, metadata, store, service_tier, parallel_tool_calls, are
// accepted; unknown fields are ignored.)
struct Unsupported {
  const char* key;
  bool (*neutral)(const Json&);
  const char* why;
};
const Unsupported kUnsupported[] = {
    {"tools", is_empty, "tool calling is not supported"},
    {"functions", is_empty, "function calling is not supported"},
    {"tool_choice", [](const Json& v) { return v == "none" || v == "auto"; },
     "tool calling is not supported (only \"none\" or \"auto\" without tools)"},
    {"function_call", [](const Json& v) { return v == "none" || v == "auto"; },
     "function calling is not supported"},
    {"response_format",
     [](const Json& v) {
       return v == Json{{"type", "text"}};
     },
     "only {\"type\": \"text\"} is supported (no JSON mode or schema)"},
    {"modalities", [](const Json& v) { return v == Json::array({"text"}); },
     "only [\"text\"] is supported"},
    {"audio", nullptr, "audio output is not supported"},
    {"prediction", nullptr, "predicted outputs are not supported"},
    {"reasoning_effort", nullptr, "this model does not reason"},
    {"web_search_options", nullptr, "web search is not supported"},
    {"suffix", is_empty, "'suffix' (insertion) is not supported"},
    // llama.cpp's sampling extensions, which front-ends made for it send.
    {"min_p", is_zero, "min-p sampling is not supported"},
    {"typical_p", is_one, "typical sampling is not supported"},
    {"tfs_z", is_one, "tail-free sampling is not supported"},
    {"top_a", is_zero, "top-a sampling is not supported"},
    {"mirostat", is_zero, "mirostat sampling is not supported"},
    {"repeat_penalty", is_one,
     "llama.cpp's windowed 'repeat_penalty' is not supported; 'repetition_penalty' is"},
    {"dry_multiplier", is_zero, "DRY sampling is not supported"},
    {"xtc_probability", is_zero, "XTC sampling is not supported"},
    {"grammar", is_empty, "grammars are not supported"},
    {"json_schema", is_empty, "JSON schemas are not supported"},
};

void check_unsupported(const Json& j) {
  for (const Unsupported& u : kUnsupported) {
    const Json* v = field(j, u.key);
    if (v && !(u.neutral && u.neutral(*v)))
      invalid(u.key, cat("'", u.key, "' is not supported: ", u.why, " (got ", v->dump(), ")"));
  }
}

// logit_bias: {"token id": bias in [-100, 100]}, ids in decimal as OpenAI writes them.
std::vector<std::pair<int, double>> logit_bias(const Json& j, const ModelInfo& m) {
  std::vector<std::pair<int, double>> out;
  const Json* v = field(j, "logit_bias");
  if (!v) return out;
  if (!v->is_object()) invalid("logit_bias", "'logit_bias' must be an object of token id -> bias");
  for (const auto& [key, bias] : v->items()) {
    int id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || std::to_string(id) != key)
      invalid("logit_bias", cat("'logit_bias' key \"", key, "\" is not a token id"));
    if (id < 0 || id >= m.vocab_size)
      invalid("logit_bias", cat("'logit_bias' token id ", id, " is outside the vocabulary [0, ",
                                m.vocab_size, ")"));
    if (!bias.is_number() || !std::isfinite(bias.get<double>()) ||
        std::abs(bias.get<double>()) > generate::kMaxLogitBias)
      invalid("logit_bias", cat("'logit_bias' of token ", id,
                                " must be a number in [-100, 100], got ", bias.dump()));
    out.emplace_back(id, bias.get<double>());
  }
  return out;
}

generate::LogitPenalties penalties(const Json& j, const ModelInfo& m) {
  generate::LogitPenalties p;
  const double lim = generate::kMaxPenalty;
  p.frequency = number(j, "frequency_penalty", 0.0, -lim, lim);
  p.presence = number(j, "presence_penalty", 0.0, -lim, lim);
  if (const Json* v = field(j, "repetition_penalty")) {
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0.0)
      invalid("repetition_penalty",
              cat("'repetition_penalty' must be a number > 0, got ", v->dump()));
    p.repetition = v->get<double>();
  }
  p.bias = logit_bias(j, m);
  return p;
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
  if (m.start_id >= 0) p.ids.insert(p.ids.begin(), m.start_id);  // (as tinylm generate does)
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

GenParams common_params(const Json& j, const ModelInfo& m, uint64_t random_seed) {
  check_model(j);
  check_unsupported(j);
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
  g.penalties = penalties(j, m);
  g.n = static_cast<int>(integer(j, "n", 1, 1, kMaxChoices));
  // best_of = n keeps every choice, which is what n alone does; more would rank them.
  if (integer(j, "best_of", g.n, 1, kMaxChoices) != g.n)
    invalid("best_of", "'best_of' other than 'n' is not supported");
  g.stop = stops(j);
  g.stream = boolean(j, "stream", false);
  g.ignore_eos = boolean(j, "ignore_eos", false);
  if (const Json* o = field(j, "stream_options")) {
    if (!o->is_object()) invalid("stream_options", "'stream_options' must be an object");
    g.include_usage = boolean(*o, "include_usage", false);
  }
  return g;
}

// A message's content: a string, or a list of text parts ([{"type": "text", "text": "..."}],
// joined as they come); other parts (images, audio, files) are refused by type.
std::string message_content(const Json& msg, size_t i) {
  const std::string where = cat("messages[", i, "].content");
  const Json* content = field(msg, "content");
  if (content && content->is_string()) return content->get<std::string>();
  if (!content || !content->is_array())
    invalid("messages", cat(where, " must be a string or a list of text parts"));
  std::string text;
  for (const Json& part : *content) {
    const Json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || !type->is_string())
      invalid("messages", cat(where, ": each part must be an object with a 'type'"));
    if (*type != "text")
      invalid("messages", cat(where, ": content parts of type '", type->get<std::string>(),
                              "' are not supported (text only)"));
    const Json* t = field(part, "text");
    if (!t || !t->is_string())
      invalid("messages", cat(where, ": a text part needs a 'text' string"));
    text += t->get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> chat_messages(const Json& j) {
  const Json* msgs = field(j, "messages");
  if (!msgs || !msgs->is_array() || msgs->empty())
    invalid("messages", "'messages' must be a non-empty list");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Json& msg = (*msgs)[i];
    if (!msg.is_object()) invalid("messages", "each message must be an object");
    const Json* role = field(msg, "role");
    if (!role || !role->is_string())
      invalid("messages", cat("messages[", i, "] needs a 'role' string"));
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "developer") {
      invalid("messages", cat("messages[", i, "]: the role '", role->get<std::string>(),
                              "' is not supported (system, developer, user, assistant; no tools)"));
    }
    // What would change the prompt and has no place in the plain-text template.
    for (const char* key : {"name", "tool_calls", "function_call", "tool_call_id", "audio"}) {
      if (const Json* v = field(msg, key); v && !is_empty(*v))
        invalid("messages", cat("messages[", i, "].", key, " is not supported"));
    }
    messages.push_back(
        {*role == "developer" ? "system" : role->get<std::string>(), message_content(msg, i)});
  }
  return messages;
}

// Clamps max_tokens per prompt to the room its context leaves, and checks the prompt fits and
// the choices are not too many.
void fit_context(CompletionRequest& r, const ModelInfo& m) {
  if (r.prompts.size() * static_cast<size_t>(r.params.n) > kMaxChoices)
    invalid("n", cat("at most ", kMaxChoices, " choices (prompts x n) in one request"));
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
  CompletionRequest r;
  r.params = common_params(j, m, random_seed);
  r.params.max_tokens = static_cast<int>(
      integer(j, "max_completion_tokens", integer(j, "max_tokens", 16, 0, 1 << 30), 0, 1 << 30));
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
  const std::vector<ChatMessage> messages = chat_messages(j);
  CompletionRequest r;
  r.chat = true;
  r.params = common_params(j, m, random_seed);
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
