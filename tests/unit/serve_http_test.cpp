// tinylm serve over real sockets on 127.0.0.1: every endpoint, streaming, every error status,
// a client that goes away, a bounded load test in which every answer equals the same request
// served alone, and SIGTERM ending the CLI's server cleanly (its --alias names listed).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve_test_server.h"
#include "test_util.h"
#include "tinylm/serve/server.h"

namespace tinylm::serve {
namespace TINYLM_TEST_LOCAL {

using Json = nlohmann::json;
using namespace std::chrono_literals;

TEST(ServeHttp, EveryEndpoint) {
  Running s({});
  httplib::Client c = s.client();
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["status"], "ok");
  r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  const Json models = Json::parse(r->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "small");
  EXPECT_EQ(models["data"][0]["object"], "model");
  r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(r->body.find("</html>"), std::string::npos);
  r = post(c, "/tokenize", R"({"content":"Hello world"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["tokens"], Json::parse("[15496, 995]"));
  r = post(c, "/detokenize", R"({"tokens":[15496, 995]})");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["content"], "Hello world");

  // A completion whole and streamed: the same text, the stream ends in [DONE] with usage.
  const std::string body = R"({"prompt":"Hello world","max_tokens":12,"temperature":0.8,"seed":4)";
  r = post(c, "/v1/completions", body + "}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json whole = Json::parse(r->body);
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["model"], "small");
  EXPECT_EQ(whole["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(whole["choices"][0]["index"], 0);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(whole["usage"]["completion_tokens"], 12);
  EXPECT_EQ(whole["usage"]["total_tokens"], 14);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  r = post(c, "/v1/completions", body + R"(,"stream":true})");
  ASSERT_TRUE(r);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const Sse sse = parse_sse(r->body);
  EXPECT_TRUE(sse.done);
  ASSERT_GE(sse.events.size(), 2u);
  EXPECT_EQ(sse.text, whole["choices"][0]["text"]);
  EXPECT_EQ(sse.events.back()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(sse.events.back()["usage"], whole["usage"]);
  for (size_t i = 0; i + 1 < sse.events.size(); ++i)
    EXPECT_TRUE(sse.events[i]["choices"][0]["finish_reason"].is_null());

  // Echo, stop sequences, several prompts, logprobs.
  r = post(c, "/v1/completions", R"({"prompt":"Hi","max_tokens":3,"echo":true,"seed":1})");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["text"].get<std::string>().rfind("Hi", 0), 0u);
  r = post(c, "/v1/completions",
           R"({"prompt":["One","Two"],"max_tokens":4,"seed":2,"logprobs":2})");
  ASSERT_TRUE(r);
  const Json two = Json::parse(r->body);
  ASSERT_EQ(two["choices"].size(), 2u);
  EXPECT_EQ(two["choices"][1]["index"], 1);
  const Json& lp = two["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"].size(), 4u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_LE(lp["token_logprobs"][0].get<double>(), 0.0);

  // Chat, whole and streamed.
  const std::string chat =
      R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"seed":3)";
  r = post(c, "/v1/chat/completions", chat + "}");
  ASSERT_TRUE(r);
  const Json reply = Json::parse(r->body);
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["choices"][0]["message"]["role"], "assistant");
  r = post(c, "/v1/chat/completions", chat + R"(,"stream":true})");
  ASSERT_TRUE(r);
  const Sse chat_sse = parse_sse(r->body);
  EXPECT_TRUE(chat_sse.done);
  EXPECT_EQ(chat_sse.events.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chat_sse.events.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(chat_sse.text, reply["choices"][0]["message"]["content"]);

  // The metrics count what happened.
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("tinylm_requests_total{endpoint=\"/v1/completions\",code=\"200\"} 4"),
            std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("tinylm_generated_tokens_total"), std::string::npos);
  EXPECT_NE(r->body.find("tinylm_queue_length 0"), std::string::npos);
}

// The stream interval only groups a stream's news into fewer events: each token's text and
// logprobs arrive, in order, whether sent one by one or an hour's gap apart (then the writer
// finds them at the end of each of its waits, and at the end).
TEST(ServeHttp, StreamIntervalOnlyGroupsTheNews) {
  const std::string body =
      R"({"prompt":"Hello","max_tokens":30,"temperature":0.9,"seed":7,"logprobs":1,)";
  Json whole;
  for (const std::chrono::milliseconds interval : {0ms, std::chrono::milliseconds(1h)}) {
    ServerOptions o;
    o.stream_interval = interval;
    Running s(o);
    httplib::Client c = s.client();
    if (whole.is_null()) {
      auto r = post(c, "/v1/completions", body + R"("stream":false})");
      ASSERT_TRUE(r);
      whole = Json::parse(r->body);
    }
    auto r = post(c, "/v1/completions", body + R"("stream":true})");
    ASSERT_TRUE(r);
    const Sse sse = parse_sse(r->body);
    EXPECT_TRUE(sse.done);
    EXPECT_EQ(sse.text, whole["choices"][0]["text"]) << interval.count();
    Json tokens = Json::array();
    for (const Json& ev : sse.events) {
      for (const Json& t : ev["choices"][0]["logprobs"]["tokens"]) tokens.push_back(t);
    }
    EXPECT_EQ(tokens, whole["choices"][0]["logprobs"]["tokens"]) << interval.count();
    EXPECT_EQ(sse.events.back()["usage"], whole["usage"]);
  }
}

TEST(ServeHttp, EveryErrorStatus) {
  ServerOptions o;
  o.api_key = "sesame";
  o.max_body = 4096;
  Running s(o);
  httplib::Client c = s.client();
  expect_error(post(c, "/v1/completions", R"({"prompt":"a"})"), 401);
  c.set_bearer_token_auth("wrong");
  expect_error(post(c, "/v1/completions", R"({"prompt":"a"})"), 401);
  expect_error(c.Get("/metrics"), 401);
  EXPECT_EQ(c.Get("/health")->status, 200);  // health and the page need no key
  EXPECT_EQ(c.Get("/")->status, 200);
  c.set_bearer_token_auth("sesame");
  expect_error(post(c, "/v1/completions", R"({"prompt":"a","top_p":2})"), 400, "top_p");
  expect_error(post(c, "/v1/completions", "not json"), 400);
  expect_error(c.Get("/v1/nothing"), 404);
  expect_error(c.Get("/v1/completions"), 404);  // POST only
  expect_error(post(c, "/v1/completions", R"({"prompt":")" + std::string(5000, 'a') + "\"}"), 413);
  EXPECT_EQ(post(c, "/v1/completions", R"({"prompt":"a","max_tokens":2})")->status, 200);
}

TEST(ServeHttp, FullServerAnswers429AndShutdownAnswers503) {
  ServerOptions o;
  o.slots = 1;
  o.queue = 0;
  Running s(o, 1024, 64, 1024);
  std::atomic<bool> first_chunk{false};
  std::string long_body;
  std::thread long_request([&] {
    httplib::Client c = s.client();
    auto r =
        post_streaming(c, "/v1/completions",
                       R"({"prompt":[7],"max_tokens":1000,"temperature":1,"seed":1,"stream":true})",
                       [&](const char* data, size_t n) {
                         long_body.append(data, n);
                         first_chunk = true;
                         return true;
                       });
    ASSERT_TRUE(r);
  });
  while (!first_chunk) std::this_thread::sleep_for(1ms);
  httplib::Client c = s.client();
  expect_error(post(c, "/v1/completions", R"({"prompt":[8],"max_tokens":1})"), 429);
  // Shutting down: new generations get 503, the running one finishes whole.
  std::thread stopper([&] { s.server().shutdown(); });
  for (int i = 0; i < 1000 && c.Get("/health")->status != 503; ++i)
    std::this_thread::sleep_for(1ms);
  expect_error(post(c, "/v1/completions", R"({"prompt":[8],"max_tokens":1})"), 503);
  long_request.join();
  stopper.join();
  s.join();
  const Sse sse = parse_sse(long_body);
  EXPECT_TRUE(sse.done);
  EXPECT_EQ(sse.events.back()["usage"]["completion_tokens"], 1000);
}

TEST(ServeHttp, AClientThatGoesAwayCancelsItsGeneration) {
  Running s({}, 1024, 256, 1024);
  {  // a streaming client that stops reading after the first event and hangs up
    httplib::Client c = s.client();
    post_streaming(c, "/v1/completions", R"({"prompt":[7],"max_tokens":1000,"stream":true})",
                   [](const char*, size_t) { return false; });
  }
  {  // a client that gives up waiting for a whole response after 50 ms
    httplib::Client c = s.client();
    c.set_read_timeout(0, 50000);
    post(c, "/v1/completions", R"({"prompt":[7],"max_tokens":1000})");
  }
  httplib::Client c = s.client();
  std::string metrics;
  for (int i = 0; i < 500; ++i) {
    metrics = c.Get("/metrics")->body;
    if (metrics.find("tinylm_cancelled_total 2") != std::string::npos) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_NE(metrics.find("tinylm_cancelled_total 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tinylm_active_slots 0"), std::string::npos);
}

int64_t resident_kb() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// 32 clients x 8 requests each, whole and streamed, 16 different requests among them: every
// answer equals the same request served alone, none fails, and resident memory does not grow
// from round to round. Prompts are token ids below the 1,024-token vocabulary.
TEST(ServeHttp, LoadTestAnswersEqualAloneAndMemoryIsStable) {
  ServerOptions o;
  o.slots = 8;
  o.queue = 64;
  Running s(o, 128, 64, 1024);
  std::vector<std::string> bodies;
  for (int i = 0; i < 16; ++i) {
    bodies.push_back(Json{
        {"prompt", {7 + i, 300 + 41 * i, 999 - 13 * i, 64}},
        {"max_tokens", 8 + i % 5 * 4},
        {"temperature", i % 4 == 0 ? 0.0 : 0.9},
        {"top_k", i % 3 == 0 ? 20 : 0},
        {"seed",
         100 + i}}.dump());
  }
  std::vector<std::string> alone;
  {
    httplib::Client c = s.client();
    for (const std::string& b : bodies) {
      auto r = post(c, "/v1/completions", b);
      ASSERT_TRUE(r);
      alone.push_back(Json::parse(r->body)["choices"][0]["text"]);
    }
  }
  // Under AddressSanitizer one round: the rounds after it are there for the memory check.
  const int rounds = kAddressSanitizer ? 1 : 3;
  std::vector<int64_t> rss;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<int> failures{0}, mismatches{0};
    std::vector<std::thread> clients;
    for (int k = 0; k < 32; ++k) {
      clients.emplace_back([&, k] {
        httplib::Client c = s.client();
        c.set_read_timeout(120, 0);  // each request bounded in time
        for (int j = 0; j < 8; ++j) {
          const int i = (k * 8 + j + round) % 16;
          const bool stream = (k + j) % 2 == 1;
          Json b = Json::parse(bodies[i]);
          b["stream"] = stream;
          auto r = post(c, "/v1/completions", b.dump());
          if (!r || r->status != 200) {
            ++failures;
            continue;
          }
          const std::string text =
              stream ? parse_sse(r->body).text
                     : Json::parse(r->body)["choices"][0]["text"].get<std::string>();
          if (text != alone[i]) ++mismatches;
        }
      });
    }
    for (auto& t : clients) t.join();
    EXPECT_EQ(failures, 0) << "round " << round;
    EXPECT_EQ(mismatches, 0) << "round " << round;
    rss.push_back(resident_kb());
  }
  // AddressSanitizer keeps freed memory in quarantine, so resident memory says nothing there
  // (its LeakSanitizer checks for leaks instead).
  if (!kAddressSanitizer) {
    std::printf("resident memory after each round: %ld, %ld, %ld kB\n", static_cast<long>(rss[0]),
                static_cast<long>(rss[1]), static_cast<long>(rss[2]));
    EXPECT_LT(rss[2], rss[0] + 16 * 1024) << "resident memory grew by more than 16 MB";
  }
}

// The CLI's server: ready line, a request, SIGTERM while a generation runs: the generation is
// answered whole and the process exits 0.
TEST(ServeCli, SigtermFinishesTheRequestAndExitsZero) {
  const std::string dir = ::testing::TempDir() + "serve_cli_model";
  const test::CommandResult init = test::run_cli("init --preset small-test --out " + dir);
  ASSERT_EQ(init.exit_code, 0) << init.err;
  int err_pipe[2];
  ASSERT_EQ(pipe(err_pipe), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  const std::string cli = TINYLM_CLI_PATH;
  std::vector<std::string> args = {cli,       "serve",       "--model",   dir,
                                   "--port",  "0",           "--threads", "1",
                                   "--alias", "gpt-4o-mini", "--alias",   "local"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ), 0);
  close(err_pipe[1]);
  std::string log;
  int port = 0;
  char buf[512];
  while (port == 0) {
    const ssize_t n = read(err_pipe[0], buf, sizeof buf);
    ASSERT_GT(n, 0) << "the server ended before listening: " << log;
    log.append(buf, static_cast<size_t>(n));
    const size_t at = log.find("listening on http://127.0.0.1:");
    if (at != std::string::npos && log.find('\n', at) != std::string::npos)
      port = std::stoi(log.substr(at + 30));
  }
  httplib::Client c("127.0.0.1", port);
  // --alias, repeated: listed after the id.
  const auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  std::vector<std::string> ids;
  const Json listed = Json::parse(models->body);
  for (const Json& m : listed["data"]) ids.push_back(m["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"serve_cli_model", "gpt-4o-mini", "local"}))
      << models->body;
  std::atomic<bool> started{false};
  std::string body;
  std::thread request([&] {
    auto r = post_streaming(c, "/v1/completions",
                            R"({"prompt":"x","max_tokens":120,"stream":true,"seed":1})",
                            [&](const char* d, size_t n) {
                              body.append(d, n);
                              started = true;
                              return true;
                            });
    EXPECT_TRUE(r);
  });
  while (!started) std::this_thread::sleep_for(1ms);
  kill(pid, SIGTERM);
  request.join();
  int status = 0;
  waitpid(pid, &status, 0);
  while (read(err_pipe[0], buf, sizeof buf) > 0) log += buf;
  close(err_pipe[0]);
  posix_spawn_file_actions_destroy(&actions);
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 0) << log;
  const Sse sse = parse_sse(body);
  EXPECT_TRUE(sse.done);
  EXPECT_EQ(sse.events.back()["choices"][0]["finish_reason"], "length");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve
