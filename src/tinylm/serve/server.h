#pragma once
// tinylm serve: an OpenAI-compatible HTTP API over one model (docs/serve.md).
//   POST /v1/completions, /v1/chat/completions (stream: Server-Sent Events), /tokenize,
//   /detokenize; GET /v1/models, /health, /metrics (Prometheus text), / (the web page).
// Requests are checked whole before anything is queued; generations run in the Engine
// (continuous batching); a client that goes away cancels its generation. HTTP is served by
// http::HttpServer (http/http_server.h): slow or idle clients hold a socket, not a thread.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "tinylm/generate/decode_backend.h"
#include "tinylm/serve/request.h"

namespace tinylm::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0: any free port
  std::string api_key;        // empty: no key needed
  int slots = 4;              // generations at once
  int queue = 64;             // generations waiting for a slot
  double timeout_s = 600;     // per request: queue wait + generation
  size_t max_body = 1 << 20;  // bytes of a request body
  // A streamed response's news is sent at most this often (0: each token as it comes); its
  // first news and each choice's last are sent at once.
  std::chrono::milliseconds stream_interval{20};
  // Connections open at once, overall and from one client address: past them, idle keep-alive
  // connections and then the oldest unfinished requests are closed to make room.
  int max_connections = 1024;
  int max_connections_per_peer = 256;
  // A request's headers and body arrive within this (from accept, or from its first byte).
  std::chrono::milliseconds request_timeout{30'000};
  // A keep-alive connection waits this long for its next request.
  std::chrono::milliseconds idle_timeout{5'000};
};

class Server {
 public:
  // backend, tokenizer (in model.tokenizer) and model must outlive the server.
  Server(generate::DecodeBackend& backend, const ModelInfo& model, ServerOptions options);
  ~Server();
  // Binds the listening socket; returns the port (the chosen one when options.port is 0).
  int bind();
  // Serves until shutdown() (from any thread); returns when every connection has ended. The
  // generations run on the calling thread (best the one that loaded the model: see
  // Engine::run), connections on the HTTP layer's threads.
  void run();
  // Stops accepting generations (503), lets those queued or running finish and their
  // responses be written, then stops listening and closes every other connection at once
  // (idle, or still sending its request).
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// a == b without an early exit: the time taken does not depend on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tinylm::serve
