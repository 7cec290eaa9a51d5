#pragma once
// One HTTP request through libcurl, as the Hub client needs it: redirects followed here (not by
// curl) so that the bearer token goes to its own origin only and each hop's headers can be read;
// the body streamed to a sink (a download) or collected (a listing, an error's text).
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>

#include "tinylm/core/error.h"

namespace tinylm::hub {

struct HttpResponse;

struct HttpRequest {
  std::string url;
  bool head = false;             // HEAD instead of GET
  bool follow_redirects = true;  // false: a 3xx is the response
  std::string token;             // Authorization: Bearer TOKEN, sent only to token_origin
  std::string token_origin;      // scheme://host:port (origin_of) the token belongs to
  uint64_t range_from = 0;       // > 0: Range: bytes=N-
  // Called once with a 2xx response's status and headers, before its first body byte (a resume
  // learns there whether the server honoured its Range).
  std::function<void(const HttpResponse&)> on_start;
  // Receives a 2xx response's body as it arrives; without it the body is kept in
  // HttpResponse::body. Error responses' bodies are always kept.
  std::function<void(std::span<const char>)> sink;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // the last response's, names in lower case
  std::string body;
  std::string url;  // the URL that answered (after redirects)
  std::string header(const std::string& lower_name) const;
};

// A request that got no complete answer: the connection failed or was cut. what() is one line,
// "URL: curl's error".
class TransferError : public Error {
 public:
  using Error::Error;
};

// Throws TransferError on a transport failure; any HTTP status is returned, not thrown.
HttpResponse http_request(const HttpRequest& request);

// "scheme://host:port" of an absolute URL (the port spelled out even when it is the default),
// or "" when it does not parse.
std::string origin_of(const std::string& url);

// `location` (absolute or relative) resolved against `base`; throws Error when it does not parse.
std::string resolve_url(const std::string& base, const std::string& location);

// A URL path segment with everything but unreserved characters percent-encoded ("refs/pr/1"
// -> "refs%2Fpr%2F1").
std::string escape_segment(const std::string& text);

}  // namespace tinylm::hub
