#pragma once
// An in-process tinylm server on a free port of 127.0.0.1 over a small random GPT-2, for the
// serve tests (serve_http_test.cpp, serve_hardening_test.cpp).
#include <httplib.h>

#include <memory>
#include <thread>

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

// An in-process server on a free port, serving until destroyed; the model on `gpu` when given.
class Running {
 public:
  explicit Running(ServerOptions o, int positions = 128, int width = 64, int vocab = 50257,
                   std::shared_ptr<kernels::vulkan::Context> gpu = nullptr)
      : model_(gpu ? model_of(positions, width, vocab).to_gpu(gpu, DType::f32)
                   : model_of(positions, width, vocab)),
        backend_(generate::gpt2_backend(model_)) {
    info_.id = "small";
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
