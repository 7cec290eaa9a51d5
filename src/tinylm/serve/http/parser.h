#pragma once
// An HTTP/1.1 request parser: a pure function over the bytes a connection has received so far.
// It answers "not yet" (with how many bytes to wait for), one whole request and how many bytes
// it took (pipelined requests follow it), or an error status. Every limit is checked as soon as
// the bytes that break it arrive, so nothing is buffered past them: the header section's size,
// a Content-Length over the body limit, and a chunked body's data and framing.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::serve::http {

struct Header {
  std::string name, value;  // the name as sent; the value without surrounding whitespace
};

struct Request {
  std::string method;     // "GET", "POST", ...
  std::string target;     // as sent: path and query
  std::string path;       // the target up to '?'
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  std::vector<Header> headers;
  std::string body;        // chunked bodies decoded
  bool keep_alive = true;  // the client lets the connection serve another request

  // The first header of that name (compared without case), or "" when there is none.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct Limits {
  size_t max_header_bytes = 16 * 1024;  // the request line and the headers, with their CRLFs
  size_t max_body = 1 << 20;            // body bytes (a chunked body's data)
  // A chunked body's framing (size lines, extensions, trailers): enough for a chunk of every
  // 16 bytes of a 1 MB body, not a way around the body limit.
  size_t max_chunk_framing = 64 * 1024;
};

enum class ParseStatus { incomplete, complete, error };

struct ParseResult {
  ParseStatus status = ParseStatus::incomplete;
  // complete: the request. error: whatever the request line gave (method, path) for the log.
  Request request;
  size_t consumed = 0;  // complete: the request's bytes
  // incomplete: parsing again is useless until this many bytes have been received.
  size_t need = 0;
  bool headers_done = false;  // incomplete: the headers are whole (100-continue may be sent)
  int error_status = 0;       // error: 400, 413 (body), 431 (headers), 501 (transfer coding), 505
  std::string error;          // error: what was wrong, one line
};

ParseResult parse_request(std::string_view bytes, const Limits& limits);

}  // namespace tinylm::serve::http
