// The server's request checks, stop sequences, chat template and key comparison: what a client
// can send is refused with the parameter named before any work is queued.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tinylm/generate/stop_text.h"
#include "tinylm/serve/api_error.h"
#include "tinylm/serve/chat_template.h"
#include "tinylm/serve/request.h"
#include "tinylm/serve/server.h"

namespace tinylm::serve {
namespace TINYLM_TEST_LOCAL {

const BpeTokenizer& gpt2_tokenizer() {
  static const BpeTokenizer tok = BpeTokenizer::from_directory(test::source_path("data/gpt2"));
  return tok;
}

ModelInfo info(int context = 32) {
  ModelInfo m;
  m.id = "tiny";
  m.tokenizer = &gpt2_tokenizer();
  m.vocab_size = 50257;
  m.context = context;
  m.eos_id = 50256;
  return m;
}

// The parameter an invalid body is refused for, and its status.
std::pair<int, std::string> refusal(const std::string& body, bool chat = false) {
  try {
    if (chat) {
      parse_chat(body, info(), 7);
    } else {
      parse_completion(body, info(), 7);
    }
  } catch (const ApiError& e) {
    return {e.status, e.param};
  }
  return {0, "accepted"};
}

TEST(ServeRequest, ParsesACompletionWithEveryField) {
  const CompletionRequest r = parse_completion(
      R"({"model":"tiny","prompt":"Hello world","max_tokens":5,"temperature":0.5,"top_p":0.9,
          "top_k":40,"seed":-1,"stop":["\n","!"],"stream":true,"logprobs":2,"user":"x",
          "frequency_penalty":0,"n":1})",
      info(), 7);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int>{15496, 995}));  // GPT-2's ids, as tiktoken gives
  EXPECT_EQ(r.prompts[0].max_tokens, 5);
  EXPECT_EQ(r.params.sampling.temperature, 0.5);
  EXPECT_EQ(r.params.sampling.top_p, 0.9);
  EXPECT_EQ(r.params.sampling.top_k, 40);
  EXPECT_EQ(r.params.sampling.seed, ~uint64_t{0});  // -1 as two's complement
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"\n", "!"}));
  EXPECT_TRUE(r.params.stream);
  EXPECT_EQ(r.params.logprobs, 2);
}

TEST(ServeRequest, JsonNestsAtMost64Levels) {
  const auto nested = [](int arrays) {  // the object is one level, each array one more
    return R"({"prompt":"a","x":)" + std::string(arrays, '[') + std::string(arrays, ']') + "}";
  };
  EXPECT_EQ(refusal(nested(63)).second, "accepted");
  EXPECT_EQ(refusal(nested(64)), std::make_pair(400, std::string()));
  EXPECT_EQ(refusal(std::string(1 << 20, '[')).first, 400);
}

TEST(ServeRequest, DefaultsAreOpenAIs) {
  const CompletionRequest r = parse_completion(R"({"prompt":"Hi"})", info(), 7);
  EXPECT_EQ(r.params.max_tokens, 16);
  EXPECT_EQ(r.params.sampling.temperature, 1.0);
  EXPECT_EQ(r.params.sampling.seed, 7u);  // the server's random seed when none is given
  EXPECT_FALSE(r.params.stream);
  EXPECT_EQ(r.params.logprobs, -1);
}

TEST(ServeRequest, PromptsAsStringsListsAndTokenIds) {
  const CompletionRequest r =
      parse_completion(R"({"prompt":["a", [1, 2, 3]], "max_tokens": 4})", info(), 0);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(r.prompts[1].text, "\"#$");  // ids 1..3 decode to these bytes
  // An empty prompt is refused, as the CLI refuses it.
  for (const char* empty : {R"({"prompt":""})", R"({"prompt":["a", ""]})", R"({"prompt":[[]]})"})
    EXPECT_EQ(refusal(empty), std::make_pair(400, std::string("prompt"))) << empty;
  const CompletionRequest ids = parse_completion(R"({"prompt":[464, 3290]})", info(), 0);
  EXPECT_EQ(ids.prompts[0].ids, (std::vector<int>{464, 3290}));
}

TEST(ServeRequest, MaxTokensIsClampedToTheContext) {
  const CompletionRequest r =
      parse_completion(R"({"prompt":[1,2,3,4,5,6,7,8,9,10], "max_tokens": 1000})", info(16), 0);
  EXPECT_EQ(r.prompts[0].max_tokens, 6);
  // A prompt that fills the context leaves no room: refused, not cut.
  std::string full = "[";
  for (int i = 0; i < 32; ++i) full += (i ? ",1" : "1");
  full += "]";
  EXPECT_EQ(refusal(R"({"prompt":)" + full + "}"), std::make_pair(400, std::string("prompt")));
  EXPECT_EQ(parse_completion(R"({"prompt":)" + full + R"(,"max_tokens":0,"echo":true})", info(), 0)
                .prompts[0]
                .max_tokens,
            0);
}

TEST(ServeRequest, EveryBadParameterIsRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"prompt":"a","temperature":-0.1})", "temperature"},
      {R"({"prompt":"a","temperature":2.5})", "temperature"},
      {R"({"prompt":"a","temperature":"hot"})", "temperature"},
      {R"({"prompt":"a","top_p":0})", "top_p"},
      {R"({"prompt":"a","top_p":1.5})", "top_p"},
      {R"({"prompt":"a","top_k":-1})", "top_k"},
      {R"({"prompt":"a","top_k":1.5})", "top_k"},
      {R"({"prompt":"a","max_tokens":-1})", "max_tokens"},
      {R"({"prompt":"a","max_tokens":1e9})", "max_tokens"},
      {R"({"prompt":"a","seed":1.5})", "seed"},
      {R"({"prompt":"a","stop":""})", "stop"},
      {R"({"prompt":"a","stop":["a","b","c","d","e"]})", "stop"},
      {R"({"prompt":"a","stop":[1]})", "stop"},
      {R"({"prompt":"a","stream":"yes"})", "stream"},
      {R"({"prompt":"a","logprobs":6})", "logprobs"},
      {R"({"prompt":"a","echo":true,"logprobs":1})", "echo"},
      {R"({"prompt":"a","n":0})", "n"},
      {R"({"prompt":"a","n":65})", "n"},
      {R"({"prompt":["a","b"],"n":33})", "n"},  // 66 choices
      {R"({"prompt":"a","best_of":2})", "best_of"},
      {R"({"prompt":"a","presence_penalty":2.5})", "presence_penalty"},
      {R"({"prompt":"a","presence_penalty":"x"})", "presence_penalty"},
      {R"({"prompt":"a","frequency_penalty":-2.01})", "frequency_penalty"},
      {R"({"prompt":"a","repetition_penalty":0})", "repetition_penalty"},
      {R"({"prompt":"a","repetition_penalty":-1})", "repetition_penalty"},
      {R"({"prompt":"a","logit_bias":{"1":101}})", "logit_bias"},
      {R"({"prompt":"a","logit_bias":{"1":"5"}})", "logit_bias"},
      {R"({"prompt":"a","logit_bias":{"50257":1}})", "logit_bias"},
      {R"({"prompt":"a","logit_bias":{"-1":1}})", "logit_bias"},
      {R"({"prompt":"a","logit_bias":{"01":1}})", "logit_bias"},
      {R"({"prompt":"a","logit_bias":{"x":1}})", "logit_bias"},
      {R"({"prompt":"a","logit_bias":[1]})", "logit_bias"},
      {R"({"prompt":"a","stream_options":{"include_usage":1}})", "include_usage"},
      {R"({"prompt":"a","stream_options":true})", "stream_options"},
      {R"({"prompt":"a","max_completion_tokens":-1})", "max_completion_tokens"},
      {R"({"prompt":"a","model":5})", "model"},
      {R"({"prompt":"a","suffix":"b"})", "suffix"},
      {R"({"prompt":5})", "prompt"},
      {R"({"prompt":[]})", "prompt"},
      {R"({"prompt":[50257]})", "prompt"},
      {R"({"prompt":[-1]})", "prompt"},
      {R"({"prompt":[[1],{"a":1}]})", "prompt"},
      {R"({"max_tokens":3})", "prompt"},
      {R"([1,2])", ""},
      {R"({"prompt":"a",)", ""},
      {R"({"prompt":"a","prompt":"b"})", ""},  // a repeated key
  };
  for (const auto& [body, param] : cases) {
    EXPECT_EQ(refusal(body), std::make_pair(400, param)) << body;
  }
}

TEST(ServeRequest, AnyModelNameIsServed) {
  // One model served: front-ends send their own default, as to llama-server.
  for (const char* name : {"tiny", "gpt-4o-mini", ""}) {
    EXPECT_EQ(refusal(cat(R"({"prompt":"a","model":")", name, "\"}")).second, "accepted") << name;
    EXPECT_EQ(
        refusal(cat(R"({"messages":[{"role":"user","content":"a"}],"model":")", name, "\"}"), true)
            .second,
        "accepted")
        << name;
  }
}

TEST(ServeRequest, PenaltiesBiasNAndStreamOptionsAreParsed) {
  const CompletionRequest r = parse_completion(
      R"({"prompt":"a","frequency_penalty":-0.5,"presence_penalty":2,"repetition_penalty":1.25,
          "logit_bias":{"15496":-100,"0":100,"995":2.5},"n":3,"best_of":3,"stream":true,
          "stream_options":{"include_usage":true},"max_completion_tokens":7})",
      info(), 7);
  const generate::LogitPenalties& p = r.params.penalties;
  EXPECT_EQ(p.frequency, -0.5);
  EXPECT_EQ(p.presence, 2.0);
  EXPECT_EQ(p.repetition, 1.25);
  EXPECT_EQ(p.bias, (std::vector<std::pair<int, double>>{{15496, -100.0}, {0, 100.0}, {995, 2.5}}));
  EXPECT_EQ(r.params.n, 3);
  EXPECT_TRUE(r.params.include_usage);
  EXPECT_EQ(r.params.max_tokens, 7);
  const CompletionRequest d = parse_completion(R"({"prompt":"a"})", info(), 7);
  EXPECT_TRUE(d.params.penalties.neutral());
  EXPECT_EQ(d.params.n, 1);
  EXPECT_FALSE(d.params.include_usage);
  // max_completion_tokens wins over max_tokens, as for chat.
  EXPECT_EQ(
      parse_completion(R"({"prompt":"a","max_tokens":9,"max_completion_tokens":4})", info(), 7)
          .params.max_tokens,
      4);
}

TEST(ServeRequest, FieldsWithoutAnEffectHereAreRefusedByNameUnlessNeutral) {
  const std::string chat = R"({"messages":[{"role":"user","content":"a"}],)";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"("tools":[{"type":"function","function":{"name":"f"}}]})", "tools"},
      {R"("tool_choice":"required"})", "tool_choice"},
      {R"("functions":[{"name":"f"}]})", "functions"},
      {R"("function_call":{"name":"f"}})", "function_call"},
      {R"("response_format":{"type":"json_object"}})", "response_format"},
      {R"("modalities":["text","audio"]})", "modalities"},
      {R"("audio":{"voice":"alloy"}})", "audio"},
      {R"("prediction":{"type":"content","content":"x"}})", "prediction"},
      {R"("reasoning_effort":"low"})", "reasoning_effort"},
      {R"("web_search_options":{}})", "web_search_options"},
      {R"("min_p":0.05})", "min_p"},
      {R"("typical_p":0.9})", "typical_p"},
      {R"("mirostat":2})", "mirostat"},
      {R"("repeat_penalty":1.1})", "repeat_penalty"},
      {R"("tfs_z":0.95})", "tfs_z"},
      {R"("top_a":0.1})", "top_a"},
      {R"("dry_multiplier":0.8})", "dry_multiplier"},
      {R"("xtc_probability":0.5})", "xtc_probability"},
      {R"("grammar":"root ::= x"})", "grammar"},
      {R"("json_schema":{"type":"object"}})", "json_schema"},
  };
  for (const auto& [rest, param] : refused) {
    EXPECT_EQ(refusal(chat + rest, true), std::make_pair(400, param)) << rest;
  }
  EXPECT_EQ(refusal(R"({"prompt":"a","suffix":"b"})"), std::make_pair(400, std::string("suffix")));
  // The message names the field and why.
  try {
    parse_chat(chat + R"("tools":[{"type":"function"}]})", info(), 0);
    ADD_FAILURE() << "tools accepted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("'tools' is not supported"), std::string::npos)
        << e.what();
  }
  const std::vector<std::string> accepted = {
      R"("user":"u1","metadata":{"k":"v"},"store":false})",
      R"("store":true,"service_tier":"auto","parallel_tool_calls":true})",
      R"("tools":[],"tool_choice":"none","response_format":{"type":"text"}})",
      R"("tool_choice":"auto","modalities":["text"],"min_p":0,"typical_p":1,"repeat_penalty":1})",
      R"("n":1,"best_of":1,"logit_bias":{},"frequency_penalty":0,"presence_penalty":0})",
      R"("tools":null,"audio":null,"stream_options":{"include_usage":false}})",
      R"("tfs_z":1,"top_a":0,"mirostat":0,"dry_multiplier":0,"xtc_probability":0,"grammar":""})",
      R"("function_call":"none","functions":[],"json_schema":{}})",
  };
  for (const std::string& rest : accepted) {
    EXPECT_EQ(refusal(chat + rest, true).second, "accepted") << rest;
  }
  EXPECT_EQ(refusal(R"({"prompt":"a","user":"u","metadata":{},"store":true,"suffix":""})").second,
            "accepted");
}

TEST(ServeRequest, ChatContentAsTextParts) {
  const CompletionRequest parts = parse_chat(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"Hel"},
                                                {"type":"text","text":"lo"}]}]})",
      info(64), 0);
  EXPECT_EQ(parts.prompts[0].text, "User: Hello\n\nAssistant:");
  const auto message_of = [](const std::string& body) -> std::string {
    try {
      parse_chat(body, info(64), 0);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, "messages");
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(message_of(R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"},
              {"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]})")
                .find("'image_url' are not supported"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"messages":[{"role":"user","content":[{"type":"input_audio"}]}]})")
                .find("'input_audio'"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})")
                .find("'text' string"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"messages":[{"role":"user","content":[5]}]})").find("'type'"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"messages":[{"role":"tool","content":"x","tool_call_id":"1"}]})")
                .find("'tool'"),
            std::string::npos);
  EXPECT_NE(message_of(R"({"messages":[{"role":"user","content":"x","name":"ann"}]})")
                .find("messages[0].name"),
            std::string::npos);
  EXPECT_EQ(message_of(R"({"messages":[{"role":"assistant","content":"x","tool_calls":[],
              "refusal":null}]})"),
            "accepted");
}

TEST(ServeRequest, ChatIsRenderedThroughTheTemplate) {
  const CompletionRequest r = parse_chat(
      R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],
          "max_tokens":3})",
      info(64), 0);
  EXPECT_TRUE(r.chat);
  EXPECT_EQ(r.prompts[0].text, "System: Be brief.\n\nUser: Hi\n\nAssistant:");
  EXPECT_EQ(r.params.stop, kChatStops);
  const CompletionRequest unlimited =
      parse_chat(R"({"messages":[{"role":"user","content":"Hi"}]})", info(64), 0);
  EXPECT_EQ(unlimited.prompts[0].max_tokens,
            64 - static_cast<int>(unlimited.prompts[0].ids.size()));
  EXPECT_EQ(refusal(R"({"messages":[]})", true), std::make_pair(400, std::string("messages")));
  EXPECT_EQ(refusal(R"({"messages":[{"role":"robot","content":"x"}]})", true),
            std::make_pair(400, std::string("messages")));
  EXPECT_EQ(refusal(R"({"messages":[{"role":"user"}]})", true),
            std::make_pair(400, std::string("messages")));
  EXPECT_EQ(refusal(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", true),
            std::make_pair(400, std::string("top_logprobs")));
}

TEST(ServeRequest, TokenizeAndDetokenizeBodies) {
  EXPECT_EQ(parse_tokenize(R"({"content":"Hello world"})", info()), (std::vector<int>{15496, 995}));
  EXPECT_EQ(parse_detokenize(R"({"tokens":[15496, 995]})", info()), (std::vector<int>{15496, 995}));
  EXPECT_THROW(parse_tokenize(R"({"content":1})", info()), ApiError);
  EXPECT_THROW(parse_detokenize(R"({"tokens":[50257]})", info()), ApiError);
  EXPECT_THROW(parse_detokenize(R"({"tokens":"1"})", info()), ApiError);
}

TEST(ServeStopText, HoldsBackWhatMayBecomeAStopSequence) {
  generate::StopText s({"\nUser:", "END"});
  EXPECT_EQ(s.push("Hello"), "Hello");
  EXPECT_EQ(s.push(" there\nUs"), " there");  // "\nUs" may start "\nUser:"
  EXPECT_EQ(s.push("ually"), "\nUsually");    // it did not
  EXPECT_EQ(s.push(" E"), " ");
  EXPECT_EQ(s.push("NDING"), "");  // "END" is complete: the text ends before it
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("more"), "");
  EXPECT_EQ(s.finish(), "");

  generate::StopText t({"\n\n"});
  EXPECT_EQ(t.push("a\n"), "a");
  EXPECT_EQ(t.finish(), "\n");  // the end of the text releases what was held
  generate::StopText none;
  EXPECT_EQ(none.push("x"), "x");
}

TEST(ServeAuth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(constant_time_equal("Bearer abc", "Bearer abd"));
  EXPECT_FALSE(constant_time_equal("Bearer ab", "Bearer abc"));
  EXPECT_FALSE(constant_time_equal("", "x"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve
