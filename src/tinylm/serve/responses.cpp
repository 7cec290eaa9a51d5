#include "tinylm/serve/responses.h"

namespace tinylm::serve {

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json error_body(const ApiError& e) {
  Json err;
  err["message"] = e.what();
  err["type"] = e.type;
  err["param"] = e.param.empty() ? Json(nullptr) : Json(e.param);
  err["code"] = e.code.empty() ? Json(nullptr) : Json(e.code);
  return Json{{"error", err}};
}

void ChoiceText::add(const Delta& d, const BpeTokenizer& tok) {
  // Offsets follow the tokens' bytes from where this delta's text starts; a token held back
  // by a stop sequence or a split character may shift them by its bytes.
  int64_t offset = static_cast<int64_t>(text.size());
  for (const TokenLogprob& lp : d.logprobs) {
    text_offsets.push_back(offset);
    offset += static_cast<int64_t>(tok.token_bytes(lp.id).size());
    logprobs.push_back(lp);
  }
  text += d.text;
  if (!d.finish_reason.empty()) finish_reason = d.finish_reason;
  completion_tokens = d.completion_tokens;
}

namespace {

Json bytes_of(std::string_view s) {
  Json a = Json::array();
  for (const unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

// Completions' logprobs: {tokens, token_logprobs, top_logprobs, text_offset}.
Json completion_logprobs(const ChoiceText& c, size_t first, const BpeTokenizer& tok) {
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offs = Json::array();
  for (size_t i = first; i < c.logprobs.size(); ++i) {
    const TokenLogprob& lp = c.logprobs[i];
    tokens.push_back(std::string(tok.token_bytes(lp.id)));
    lps.push_back(lp.logprob);
    Json top = Json::object();
    for (const auto& [id, v] : lp.top) top[std::string(tok.token_bytes(id))] = v;
    tops.push_back(top);
    offs.push_back(c.text_offsets[i]);
  }
  return Json{
      {"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

// Chat's logprobs: {content: [{token, logprob, bytes, top_logprobs: [...]}]}.
Json chat_logprobs(const ChoiceText& c, size_t first, const BpeTokenizer& tok) {
  Json content = Json::array();
  for (size_t i = first; i < c.logprobs.size(); ++i) {
    const TokenLogprob& lp = c.logprobs[i];
    Json top = Json::array();
    for (const auto& [id, v] : lp.top) {
      const std::string_view b = tok.token_bytes(id);
      top.push_back(Json{{"token", std::string(b)}, {"logprob", v}, {"bytes", bytes_of(b)}});
    }
    const std::string_view b = tok.token_bytes(lp.id);
    content.push_back(Json{{"token", std::string(b)},
                           {"logprob", lp.logprob},
                           {"bytes", bytes_of(b)},
                           {"top_logprobs", top}});
  }
  return Json{{"content", content}};
}

Json logprobs_of(const ResponseHead& head, const ChoiceText& c, size_t first, bool wanted,
                 const BpeTokenizer& tok) {
  if (!wanted) return nullptr;
  return head.chat ? chat_logprobs(c, first, tok) : completion_logprobs(c, first, tok);
}

Json usage_body(const Usage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

Json head_body(const ResponseHead& head, const char* object) {
  return Json{
      {"id", head.id}, {"object", object}, {"created", head.created}, {"model", head.model}};
}

}  // namespace

Json completion_body(const ResponseHead& head, const std::vector<ChoiceText>& choices,
                     const Usage& usage, const BpeTokenizer& tok) {
  Json body = head_body(head, head.chat ? "chat.completion" : "text_completion");
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceText& c = choices[i];
    const bool wanted = !c.logprobs.empty();
    Json choice{{"index", i}};
    if (head.chat) {
      choice["message"] = Json{{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = logprobs_of(head, c, 0, wanted, tok);
    choice["finish_reason"] = c.finish_reason;
    list.push_back(choice);
  }
  body["choices"] = list;
  body["usage"] = usage_body(usage);
  return body;
}

Json chunk_body(const ResponseHead& head, int index, const std::string& text,
                const ChoiceText& choice, size_t first_logprob, const std::string& finish_reason,
                const Usage* usage, const BpeTokenizer& tok) {
  Json body = head_body(head, head.chat ? "chat.completion.chunk" : "text_completion");
  Json c{{"index", index}};
  if (head.chat) {
    c["delta"] = text.empty() ? Json::object() : Json{{"content", text}};
  } else {
    c["text"] = text;
  }
  c["logprobs"] =
      logprobs_of(head, choice, first_logprob, first_logprob < choice.logprobs.size(), tok);
  c["finish_reason"] = finish_reason.empty() ? Json(nullptr) : Json(finish_reason);
  body["choices"] = Json::array({c});
  if (usage) body["usage"] = usage_body(*usage);
  return body;
}

Json usage_chunk(const ResponseHead& head, const Usage& usage) {
  Json body = head_body(head, head.chat ? "chat.completion.chunk" : "text_completion");
  body["choices"] = Json::array();
  body["usage"] = usage_body(usage);
  return body;
}

Json chat_role_chunk(const ResponseHead& head, int index) {
  Json body = head_body(head, "chat.completion.chunk");
  body["choices"] = Json::array({Json{{"index", index},
                                      {"delta", Json{{"role", "assistant"}, {"content", ""}}},
                                      {"logprobs", nullptr},
                                      {"finish_reason", nullptr}}});
  return body;
}

}  // namespace tinylm::serve
