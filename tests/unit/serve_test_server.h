#pragma once
// An in-process tinylm server on a free port of 127.0.0.1 over a small random GPT-2, for the
// serve tests (serve_http_test.cpp, serve_hardening_test.cpp, serve_compat_test.cpp), and their
// helpers: requests, SSE bodies, error bodies.
#include <gtest/gtest.h>
#include <httplib.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "tinylm/core/parallel.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/models/gpt2/init.h"
#include "tinylm/serve/server.h"

namespace tinylm::serve {

inline const BpeTokenizer& tokenizer() {
  static const BpeTokenizer tok = BpeTokenizer::from_directory(test::source_path("data/gpt2"));
  return tok;
}

// small-test's shape with more positions (and width): a long generation keeps a request in
// flight. A vocabulary of 1,024 (prompts as token ids below it) makes the head 50 times
// cheaper, which the sanitizer build needs.
inline gpt2::Model model_of(int positions, int width = 64, int vocab = 50257) {
  gpt2::Config c = gpt2::preset("small-test");
  c.n_positions = positions;
  c.n_embd = width;
  c.vocab_size = vocab;
  return gpt2::Model(c, gpt2::init_params(c, 11), DType::f32);
}

struct Sse {
  std::vector<nlohmann::json> events;
  bool done = false;                    // data: [DONE] came last
  std::string text;                     // the choices' text (or chat deltas) joined
  std::map<int, std::string> by_index;  // each choice's text
};

inline Sse parse_sse(const std::string& body) {
  Sse s;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "an event without its blank line";
    if (end == std::string::npos) break;
    const std::string ev = body.substr(at, end - at);
    at = end + 2;
    if (ev.rfind(':', 0) == 0) continue;  // a comment
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    EXPECT_FALSE(s.done) << "an event after [DONE]";
    if (ev == "data: [DONE]") {
      s.done = true;
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(ev.substr(6));
    for (const nlohmann::json& c : j.at("choices")) {
      std::string piece;
      if (c.contains("text")) piece = c["text"].get<std::string>();
      if (c.contains("delta") && c["delta"].contains("content"))
        piece = c["delta"]["content"].get<std::string>();
      s.text += piece;
      s.by_index[c.at("index").get<int>()] += piece;
    }
    s.events.push_back(std::move(j));
  }
  return s;
}

inline httplib::Result post(httplib::Client& c, const std::string& path, const std::string& body) {
  return c.Post(path.c_str(), body, "application/json");
}

// A POST whose response body is handed to on_data as it arrives.
inline httplib::Result post_streaming(httplib::Client& c, const std::string& path,
                                      const std::string& body,
                                      const std::function<bool(const char*, size_t)>& on_data) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) { return on_data(d, n); };
  return c.send(req);
}

inline void expect_error(const httplib::Result& r, int status, const std::string& param = "") {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  const nlohmann::json j = nlohmann::json::parse(r->body);
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param);
  }
}

// An in-process server on a free port, serving until destroyed; the model on `gpu` when given.
class Running {
 public:
  explicit Running(ServerOptions o, int positions = 128, int width = 64, int vocab = 50257,
                   std::shared_ptr<kernels::vulkan::Context> gpu = nullptr,
                   std::vector<std::string> aliases = {})
      : model_(gpu ? model_of(positions, width, vocab).to_gpu(gpu, DType::f32)
                   : model_of(positions, width, vocab)),
        backend_(generate::gpt2_backend(model_)) {
    info_.id = "small";
    info_.aliases = std::move(aliases);
    info_.tokenizer = &tokenizer();
    info_.vocab_size = model_.config().vocab_size;
    info_.context = model_.config().n_positions;
    info_.eos_id = 50256;
    o.port = 0;
    // One thread for the model: with more, each of a step's parallel regions waits for a
    // worker the many client and connection threads of these tests keep off the cores.
    const int threads = num_threads();
    set_num_threads(1);
    server_ = std::make_unique<Server>(*backend_, info_, o);
    set_num_threads(threads);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  ~Running() {
    if (thread_.joinable()) {
      server_->shutdown();
      thread_.join();
    }
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  Server& server() { return *server_; }
  int port() const { return port_; }
  void join() { thread_.join(); }

 private:
  gpt2::Model model_;
  std::unique_ptr<generate::DecodeBackend> backend_;
  ModelInfo info_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace tinylm::serve
