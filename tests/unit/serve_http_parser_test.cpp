// The HTTP/1.1 request parser (serve/http/parser.h): whole requests at any split of their bytes,
// pipelined requests one after another, chunked bodies, and every limit refused as soon as the
// bytes that break it arrive.
#include <gtest/gtest.h>

#include <string>

#include "tinylm/serve/http/parser.h"

namespace tinylm::serve::http {
namespace TINYLM_TEST_LOCAL {

using namespace std::string_literals;

Limits small_limits() {
  Limits l;
  l.max_header_bytes = 512;
  l.max_body = 100;
  l.max_chunk_framing = 64;
  return l;
}

ParseResult parse(std::string_view bytes, const Limits& limits = small_limits()) {
  return parse_request(bytes, limits);
}

int error_of(std::string_view bytes, const Limits& limits = small_limits()) {
  const ParseResult r = parse(bytes, limits);
  EXPECT_EQ(r.status, ParseStatus::error) << bytes;
  return r.error_status;
}

TEST(ServeHttpParser, AWholeRequestAtEverySplit) {
  const std::string req =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
      "Authorization:  Bearer k \r\n\r\nhello";
  for (size_t n = 0; n < req.size(); ++n) {
    const ParseResult r = parse(std::string_view(req).substr(0, n));
    ASSERT_EQ(r.status, ParseStatus::incomplete) << n;
    EXPECT_GT(r.need, n);
    EXPECT_LE(r.need, req.size());  // never asks for more than the request has
  }
  const ParseResult r = parse(req);
  ASSERT_EQ(r.status, ParseStatus::complete);
  EXPECT_EQ(r.consumed, req.size());
  EXPECT_EQ(r.request.method, "POST");
  EXPECT_EQ(r.request.target, "/v1/completions?x=1");
  EXPECT_EQ(r.request.path, "/v1/completions");
  EXPECT_EQ(r.request.body, "hello");
  EXPECT_EQ(r.request.header("authorization"), "Bearer k");  // any case; whitespace trimmed
  EXPECT_TRUE(r.request.keep_alive);
}

TEST(ServeHttpParser, PipelinedRequestsOneAtATime) {
  const std::string a = "GET /health HTTP/1.1\r\n\r\n";
  const std::string b = "POST /tokenize HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
  const std::string c = "GET /v1/models HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  std::string bytes = a + b + c;
  std::vector<std::string> paths;
  while (!bytes.empty()) {
    const ParseResult r = parse(bytes);
    ASSERT_EQ(r.status, ParseStatus::complete);
    paths.push_back(r.request.path);
    bytes.erase(0, r.consumed);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/health", "/tokenize", "/v1/models"}));
}

TEST(ServeHttpParser, KeepAliveByVersionAndConnection) {
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: x, keep-alive\r\n\r\n").request.keep_alive);
}

TEST(ServeHttpParser, ChunkedBodies) {
  const std::string req =
      "POST /t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nGET";
  const size_t whole = req.size() - 3;
  for (size_t n = 0; n < whole; ++n) {
    const ParseResult r = parse(std::string_view(req).substr(0, n));
    ASSERT_EQ(r.status, ParseStatus::incomplete) << n;
    EXPECT_GT(r.need, n);
  }
  const ParseResult r = parse(req);
  ASSERT_EQ(r.status, ParseStatus::complete);
  EXPECT_EQ(r.request.body, "hello 0123456789");
  EXPECT_EQ(r.consumed, whole);
}

TEST(ServeHttpParser, BodyLimitsBeforeTheBodyArrives) {
  // Content-Length over the limit: refused from the headers alone.
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), 413);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n").status,
            ParseStatus::incomplete);
  // Chunked: refused at the size line that goes past it, its data not needed.
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "32\r\n" +
                     std::string(50, 'a') + "\r\n33\r\n"),
            413);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n"),
            413);
  // Framing that grows without data: many empty-extension size lines.
  std::string framing = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 30; ++i) framing += "1;e\r\na\r\n";
  EXPECT_EQ(error_of(framing), 413);
  EXPECT_EQ(
      error_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1" + std::string(70, ';')),
      413);
}

TEST(ServeHttpParser, HeaderLimit) {
  const std::string big = "GET / HTTP/1.1\r\nX: " + std::string(600, 'a');
  EXPECT_EQ(error_of(big), 431);                     // even before its line ends
  EXPECT_EQ(error_of(std::string(600, '\n')), 431);  // empty lines count too
}

TEST(ServeHttpParser, MalformedRequests) {
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nAuthorization: Bearer k\0x\r\n\r\n"s), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), 400);  // folded
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nX a: b\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(error_of("G(T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(error_of("GET / HTTX/1.1\r\n\r\n"), 400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 501);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
  EXPECT_EQ(error_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"), 400);
  // The request line is kept for the log even when a header is refused.
  const ParseResult r = parse("POST /tokenize HTTP/1.1\r\nContent-Length: 999\r\n\r\n");
  EXPECT_EQ(r.request.path, "/tokenize");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve::http
