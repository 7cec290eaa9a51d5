// tinylm serve accepts what OpenAI clients send (docs/serve.md): any model name, aliases,
// penalties and logit_bias with the effect their definitions give (checked against greedy
// decoding with the definitions written out here), n choices each equal to the same request
// alone with seed + i, stream_options.include_usage, chat content as text parts.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "serve_test_server.h"
#include "test_util.h"
#include "tinylm/generate/generate.h"

namespace tinylm::serve {
namespace TINYLM_TEST_LOCAL {

using Json = nlohmann::json;

const std::vector<int> kPrompt = {15496, 995};  // "Hello world"
constexpr int kEos = 50256;

struct Penalties {
  double frequency = 0, presence = 0, repetition = 1;
  std::map<int, double> bias;
};

Penalties penalties(double frequency, double presence, double repetition,
                    std::map<int, double> bias = {}) {
  Penalties p;
  p.frequency = frequency;
  p.presence = presence;
  p.repetition = repetition;
  p.bias = std::move(bias);
  return p;
}

// Greedy decoding of kPrompt on the served model (Running's weights) with the penalties
// applied to every row as docs/serve.md defines them, written out independently of
// generate/logit_processors.cpp.
std::vector<int> reference_greedy(int max_tokens, const Penalties& p) {
  gpt2::Model model = model_of(128);
  auto backend = generate::gpt2_backend(model);
  const size_t V = static_cast<size_t>(backend->vocab_size());
  auto seq = backend->start(static_cast<int>(kPrompt.size()) + max_tokens, nullptr);
  std::vector<float> logits(V);
  backend->feed(*seq, kPrompt, logits);
  std::vector<int> out;
  std::map<int, int> count;  // generated so far
  for (int k = 0; k < max_tokens; ++k) {
    std::vector<float> x = logits;
    std::set<int> seen(kPrompt.begin(), kPrompt.end());
    seen.insert(out.begin(), out.end());
    const float rep = static_cast<float>(p.repetition);
    for (const int t : seen) x[t] = x[t] < 0 ? x[t] * rep : x[t] / rep;
    for (const auto& [t, c] : count)
      x[t] = static_cast<float>(x[t] - (p.frequency * c + p.presence));
    for (const auto& [t, b] : p.bias) x[t] = static_cast<float>(x[t] + b);
    int best = 0;
    for (size_t i = 1; i < V; ++i) best = x[i] > x[best] ? static_cast<int>(i) : best;
    out.push_back(best);
    ++count[best];
    if (best == kEos) break;
    backend->feed(*seq, std::span(&best, 1), logits);
  }
  return out;
}

std::string text_of(std::vector<int> ids) {
  if (!ids.empty() && ids.back() == kEos) ids.pop_back();
  return sanitize_utf8(tokenizer().decode(ids));
}

Json post_json(httplib::Client& c, const std::string& path, const std::string& body) {
  const httplib::Result r = post(c, path, body);
  EXPECT_TRUE(r);
  if (!r) return Json();
  EXPECT_EQ(r->status, 200) << r->body;
  return Json::parse(r->body);
}

std::string greedy_text(httplib::Client& c, int max_tokens, const std::string& fields) {
  const Json j = post_json(
      c, "/v1/completions",
      cat(R"({"prompt":"Hello world","temperature":0,"max_tokens":)", max_tokens, fields, "}"));
  return j["choices"][0]["text"].get<std::string>();
}

TEST(ServeCompat, PenaltiesChangeGreedyOutputAsDefined) {
  Running s({});
  httplib::Client c = s.client();
  constexpr int kTokens = 16;
  const std::vector<int> plain = reference_greedy(kTokens, {});
  ASSERT_EQ(greedy_text(c, kTokens, ""), text_of(plain));
  struct Case {
    Penalties p;
    std::string fields;
  };
  const std::vector<Case> cases = {
      {penalties(0, 2.0, 1), R"(,"presence_penalty":2)"},
      {penalties(1.5, 0, 1), R"(,"frequency_penalty":1.5)"},
      {penalties(0, 0, 3.0), R"(,"repetition_penalty":3)"},
      {penalties(-0.5, 1.0, 1.5),
       R"(,"frequency_penalty":-0.5,"presence_penalty":1,"repetition_penalty":1.5)"},
  };
  for (const Case& k : cases) {
    const std::vector<int> want = reference_greedy(kTokens, k.p);
    EXPECT_NE(want, plain) << k.fields << ": the penalty should change this greedy output";
    EXPECT_EQ(greedy_text(c, kTokens, k.fields), text_of(want)) << k.fields;
    // The CLI's generate loop, through the same options struct.
    generate::GenerateOptions o;
    o.max_tokens = kTokens;
    o.eos_id = kEos;
    o.penalties.frequency = k.p.frequency;
    o.penalties.presence = k.p.presence;
    o.penalties.repetition = k.p.repetition;
    gpt2::Model model = model_of(128);
    auto backend = generate::gpt2_backend(model);
    std::vector<int> ids = generate::generate(*backend, kPrompt, o).ids;
    std::vector<int> expected = want;
    if (!expected.empty() && expected.back() == kEos) expected.pop_back();
    EXPECT_EQ(ids, expected) << k.fields;
  }
}

TEST(ServeCompat, LogitBiasBansAndForcesTokens) {
  Running s({});
  httplib::Client c = s.client();
  const int first = reference_greedy(1, {})[0];
  // -100 on the greedy token: the next best instead, as the definition gives.
  const std::vector<int> banned = reference_greedy(4, penalties(0, 0, 1, {{first, -100.0}}));
  ASSERT_NE(banned[0], first);
  EXPECT_EQ(greedy_text(c, 4, cat(R"(,"logit_bias":{")", first, R"(":-100})")), text_of(banned));
  // +100 on "a" (GPT-2's token 64) makes every token an "a".
  EXPECT_EQ(greedy_text(c, 4, R"(,"logit_bias":{"64":100})"), "aaaa");
  // Sampling at a temperature too: a bias of +100 leaves nothing else to draw.
  const Json j = post_json(c, "/v1/completions",
                           R"({"prompt":"Hello world","temperature":1.5,"seed":3,"max_tokens":5,
                               "logit_bias":{"64":100}})");
  EXPECT_EQ(j["choices"][0]["text"], "aaaaa");
}

TEST(ServeCompat, NChoicesEachEqualTheRequestAloneWithSeedPlusI) {
  Running s({});
  httplib::Client c = s.client();
  const std::string base =
      R"({"prompt":"Hello world","temperature":1.0,"max_tokens":10,"top_k":50)";
  const Json whole = post_json(c, "/v1/completions", base + R"(,"seed":5,"n":3})");
  ASSERT_EQ(whole["choices"].size(), 3u);
  int64_t completion_tokens = 0;
  std::set<std::string> distinct;
  for (int i = 0; i < 3; ++i) {
    const Json alone = post_json(c, "/v1/completions", cat(base, R"(,"seed":)", 5 + i, "}"));
    EXPECT_EQ(whole["choices"][i]["index"], i);
    EXPECT_EQ(whole["choices"][i]["text"], alone["choices"][0]["text"]) << "choice " << i;
    completion_tokens += alone["usage"]["completion_tokens"].get<int64_t>();
    distinct.insert(alone["choices"][0]["text"].get<std::string>());
  }
  EXPECT_EQ(distinct.size(), 3u);  // three seeds, three texts
  EXPECT_EQ(whole["usage"]["completion_tokens"], completion_tokens);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], 2);  // the prompt counts once

  // Streamed: each chunk names its choice; each choice's text is the whole one's.
  const httplib::Result r = post(c, "/v1/completions", base + R"(,"seed":5,"n":3,"stream":true})");
  ASSERT_TRUE(r);
  const Sse sse = parse_sse(r->body);
  EXPECT_TRUE(sse.done);
  ASSERT_EQ(sse.by_index.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sse.by_index.at(i), whole["choices"][i]["text"]) << i;
  std::set<int> finished;
  for (const Json& ev : sse.events) {
    ASSERT_EQ(ev["choices"].size(), 1u);
    if (!ev["choices"][0]["finish_reason"].is_null())
      finished.insert(ev["choices"][0]["index"].get<int>());
  }
  EXPECT_EQ(finished, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(sse.events.back()["usage"], whole["usage"]);

  // Chat: n replies, each with its role chunk when streamed; several prompts x n in order.
  const auto chat_seed = [](int seed) {
    return cat(R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":5,"seed":)", seed);
  };
  const std::string chat = chat_seed(9);
  const Json two = post_json(c, "/v1/chat/completions", chat + R"(,"n":2})");
  ASSERT_EQ(two["choices"].size(), 2u);
  const Json second = post_json(c, "/v1/chat/completions", chat_seed(10) + "}");
  EXPECT_EQ(two["choices"][1]["message"]["content"], second["choices"][0]["message"]["content"]);
  const Sse chat_sse =
      parse_sse(post(c, "/v1/chat/completions", chat + R"(,"n":2,"stream":true})")->body);
  EXPECT_EQ(chat_sse.events[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chat_sse.events[1]["choices"][0]["index"], 1);
  EXPECT_EQ(chat_sse.by_index.at(1), two["choices"][1]["message"]["content"]);
  const Json grid = post_json(
      c, "/v1/completions",
      R"({"prompt":["Hello world","One"],"n":2,"max_tokens":3,"seed":1,"temperature":1})");
  ASSERT_EQ(grid["choices"].size(), 4u);
  const Json one = post_json(c, "/v1/completions",
                             R"({"prompt":"One","max_tokens":3,"seed":2,"temperature":1})");
  EXPECT_EQ(grid["choices"][3]["text"], one["choices"][0]["text"]);  // prompt 1, choice 1
}

TEST(ServeCompat, IncludeUsageEndsTheStreamWithAUsageChunk) {
  Running s({});
  httplib::Client c = s.client();
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = std::string(path) == "/v1/chat/completions";
    const std::string body = std::string(chat ? R"({"messages":[{"role":"user","content":"Hi"}])"
                                              : R"({"prompt":"Hi")") +
                             R"(,"max_tokens":6,"seed":2,"n":2)";
    const Json whole = post_json(c, path, body + "}");
    const Sse sse = parse_sse(
        post(c, path, body + R"(,"stream":true,"stream_options":{"include_usage":true}})")->body);
    ASSERT_TRUE(sse.done);
    const Json& last = sse.events.back();
    EXPECT_EQ(last["choices"], Json::array()) << path;
    EXPECT_EQ(last["usage"], whole["usage"]) << path;
    EXPECT_EQ(last["object"], chat ? "chat.completion.chunk" : "text_completion");
    for (size_t i = 0; i + 1 < sse.events.size(); ++i)
      EXPECT_FALSE(sse.events[i].contains("usage")) << path << " chunk " << i;
    const Json& choice = whole["choices"][1];
    EXPECT_EQ(sse.by_index.at(1), chat ? choice["message"]["content"] : choice["text"]) << path;
  }
}

TEST(ServeCompat, AnyModelIsServedUnderItsIdAndAliasesAreListed) {
  Running s({}, 128, 64, 50257, nullptr, {"gpt-4o-mini", "tiny"});
  httplib::Client c = s.client();
  const Json models = Json::parse(c.Get("/v1/models")->body);
  ASSERT_EQ(models["data"].size(), 3u);
  EXPECT_EQ(models["data"][0]["id"], "small");
  EXPECT_EQ(models["data"][1]["id"], "gpt-4o-mini");
  EXPECT_EQ(models["data"][2]["id"], "tiny");
  EXPECT_EQ(models["data"][2]["context_length"], 128);
  for (const char* name : {"gpt-4o-mini", "tiny", "anything-else"}) {
    const Json j =
        post_json(c, "/v1/chat/completions",
                  cat(R"({"model":")", name,
                      R"(","messages":[{"role":"user","content":"Hi"}],"max_tokens":2})"));
    EXPECT_EQ(j["model"], "small") << name;
  }
}

TEST(ServeCompat, ContentPartsFieldsWithoutEffectAndRefusals) {
  Running s({});
  httplib::Client c = s.client();
  const std::string tail = R"(,"max_tokens":6,"seed":4})";
  const Json plain = post_json(c, "/v1/chat/completions",
                               R"({"messages":[{"role":"user","content":"Hello there"}])" + tail);
  const Json parts =
      post_json(c, "/v1/chat/completions",
                R"({"messages":[{"role":"user","content":[{"type":"text","text":"Hello"},
                                   {"type":"text","text":" there"}]}])" +
                    tail);
  EXPECT_EQ(parts["choices"][0]["message"], plain["choices"][0]["message"]);
  const Json neutral = post_json(
      c, "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Hello there"}],"user":"u","metadata":{"a":"b"},
          "store":false,"response_format":{"type":"text"},"tools":[],"max_completion_tokens":6,
          "seed":4})");
  EXPECT_EQ(neutral["choices"][0]["message"], plain["choices"][0]["message"]);
  expect_error(post(c, "/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":[{"type":"image_url",
                        "image_url":{"url":"data:,"}}]}]})"),
               400, "messages");
  expect_error(
      post(c, "/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})"),
      400, "tools");
  expect_error(
      post(
          c, "/v1/chat/completions",
          R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})"),
      400, "response_format");
  expect_error(post(c, "/v1/completions", R"({"prompt":"x","presence_penalty":3})"), 400,
               "presence_penalty");
  // max_completion_tokens on completions too.
  EXPECT_EQ(
      post_json(
          c, "/v1/completions",
          R"({"prompt":"x","max_completion_tokens":3,"ignore_eos":true})")["usage"]
                                                                          ["completion_tokens"],
      3);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve
