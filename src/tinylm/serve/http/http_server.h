#pragma once
// An event-driven HTTP/1.1 server. One thread (run()) accepts connections and reads them with
// poll(): a request is parsed (parser.h) from what has arrived, under a deadline for its headers
// and body together, and only a whole request is handed to a worker thread, which answers it
// (whole or streamed) and gives the connection back for its next request. So a slow or idle
// client holds a socket, never a thread; the number of sockets is capped overall and per peer
// address, and when the cap is reached the idle keep-alive connections, then the oldest
// unfinished requests, make room for the new connection. Pipelined requests are answered in
// order: the connection's next request is parsed only once the previous one is answered.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "tinylm/serve/http/parser.h"
#include "tinylm/serve/http/response.h"

namespace tinylm::serve::http {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;      // 0: any free port
  int threads = 16;  // workers: requests answered at once
  Limits limits;
  int max_connections = 1024;          // open at once (also kept under the open-file limit)
  int max_connections_per_peer = 256;  // from one client address
  // A request's headers and body must arrive within this, counted from the connection's accept
  // (its first request) or from the request's first byte (the next ones).
  std::chrono::milliseconds request_timeout{30'000};
  // A keep-alive connection waits this long for its next request.
  std::chrono::milliseconds idle_timeout{5'000};
  // A client must take each write of a response within this.
  std::chrono::milliseconds write_timeout{10'000};
  // After stop(), responses still being written get this long before their sockets are shut.
  std::chrono::milliseconds stop_grace{1'000};
};

// Answers a whole request, on a worker thread.
using Handler = std::function<void(const Request&, Response&)>;
// Shapes the answer to a request refused before it was whole (400, 408, 413, 431, 501, 505);
// `partial` holds what its request line gave. It may run on the event loop's thread.
using ErrorHandler =
    std::function<void(const Request& partial, int status, const std::string& what, Response&)>;

class HttpServer {
 public:
  HttpServer(HttpOptions options, Handler handler, ErrorHandler on_error);
  ~HttpServer();
  // Binds and listens; returns the port. Raises the open-file limit to its hard limit.
  int bind();
  // Serves on the calling thread until stop(); returns once every connection has been closed.
  void run();
  // From any thread: closes the listening socket and every connection not being answered at
  // once; those being answered are closed when their response is written (or after stop_grace).
  void stop();
  // Connections open now (for tests).
  int connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinylm::serve::http
