#pragma once
// What a handler answers, and the socket writes of a worker thread: a response whole or
// streamed (chunked), each write bounded in time, and a probe of whether the client is still
// there.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/serve/http/parser.h"

namespace tinylm::serve::http {

// Where a streamed body goes.
class Sink {
 public:
  virtual ~Sink() = default;
  // Sends body bytes (as one chunk of a chunked response); false once the client is gone or
  // has not taken them within the write timeout.
  virtual bool write(std::string_view data) = 0;
  // false once the client has closed the connection or it failed.
  virtual bool client_alive() = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<Header> headers;  // more headers
  std::string body;
  // Set: the body is produced by it, as it comes (chunked); it returns false when the client is
  // gone.
  std::function<bool(Sink&)> stream;
  // Set: called once after the response, with whether it was written whole.
  std::function<void(bool whole)> done;
  // HEAD: the status line and headers of the GET answer, without its body.
  bool head_only = false;
};

// The status line and headers. `chunked`: Transfer-Encoding: chunked; else Content-Length when
// the body is whole, nothing when it is streamed to the connection's end (HTTP/1.0).
std::string response_head(const Response& res, bool chunked, bool keep_alive);

// Writes all of `data` to a non-blocking socket, waiting at most `timeout` for the client to
// take each part of it; false when it failed or timed out.
bool write_all(int fd, std::string_view data, std::chrono::milliseconds timeout);

// Whether the peer of a connected socket is still there (not closed, no error).
bool socket_alive(int fd);

// Writes `res` for a request of HTTP/1.`minor_version` and calls its `done`; returns whether
// it was written whole. A streamed response to HTTP/1.0 ends with the connection: then
// *keep_alive is cleared.
bool write_response(int fd, Response& res, int minor_version, bool* keep_alive,
                    std::chrono::milliseconds timeout);

}  // namespace tinylm::serve::http
