// libFuzzer target: arbitrary bytes as what a connection to tinylm serve has received. The
// parser must never read out of bounds, and its answers must agree with themselves: a whole
// request stays whole when parsed from exactly its own bytes, its body is within the limit, a
// request that needs more bytes asks for more than it has, an error has an HTTP status, and
// the bytes before a whole request's end (a split the network may make) never parse as whole.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_scratch.h"
#include "tinylm/serve/http/parser.h"

namespace {

using tinylm::fuzz::require;
namespace http = tinylm::serve::http;

http::Limits limits() {
  http::Limits l;  // small, so the fuzzer reaches them
  l.max_header_bytes = 1024;
  l.max_body = 256;
  l.max_chunk_framing = 128;
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const http::Limits l = limits();
  const http::ParseResult r = http::parse_request(bytes, l);
  switch (r.status) {
    case http::ParseStatus::complete: {
      require(r.consumed > 0 && r.consumed <= size);
      require(r.request.body.size() <= l.max_body);
      require(!r.request.path.empty() && r.request.path.front() == '/');
      const http::ParseResult again = http::parse_request(bytes.substr(0, r.consumed), l);
      require(again.status == http::ParseStatus::complete && again.consumed == r.consumed);
      require(again.request.body == r.request.body);
      const http::ParseResult shorter = http::parse_request(bytes.substr(0, r.consumed - 1), l);
      require(shorter.status != http::ParseStatus::complete);
      break;
    }
    case http::ParseStatus::incomplete:
      require(r.need > size);
      break;
    case http::ParseStatus::error:
      require(r.error_status >= 400 && r.error_status < 600 && !r.error.empty());
      break;
  }
  return 0;
}
