// tinylm serve against slow, idle, huge and odd clients, over real sockets on 127.0.0.1: real
// requests are answered while 200 slow clients dribble their headers, the connection caps make
// room by closing idle and slow connections, shutdown closes them at once, chunked bodies count
// against --max-body, JSON nests at most 64 levels, Range never enlarges the page, pipelined
// requests are answered in order, usage never carries over, and empty prompts and control bytes
// in headers are refused.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "serve_test_server.h"

namespace tinylm::serve {
namespace TINYLM_TEST_LOCAL {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace std::string_literals;

struct RawResponse {
  int status = 0;
  std::string head, body;
};

// A client socket that sends exactly the bytes given.
class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    const timeval tv{10, 0};  // no read waits longer
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawSocket() { ::close(fd_); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }
  bool send(std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // One response with a Content-Length body; none when the server closed or was silent 10 s.
  std::optional<RawResponse> read_response() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    RawResponse r;
    r.head = buf_.substr(0, end);
    r.status = std::stoi(r.head.substr(9, 3));
    const size_t cl = r.head.find("Content-Length: ");
    const size_t length = cl == std::string::npos ? 0 : std::stoul(r.head.substr(cl + 16));
    while (buf_.size() < end + 4 + length) {
      if (!fill()) return std::nullopt;
    }
    r.body = buf_.substr(end + 4, length);
    buf_.erase(0, end + 4 + length);
    return r;
  }
  // Whether the server has closed this connection (waiting up to `wait` for it to).
  bool closed_by_server(std::chrono::milliseconds wait = 0ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

 private:
  bool fill() {
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

std::vector<std::unique_ptr<RawSocket>> open_sockets(int port, int n) {
  std::vector<std::unique_ptr<RawSocket>> v;
  for (int i = 0; i < n; ++i) {
    v.push_back(std::make_unique<RawSocket>(port));
    EXPECT_TRUE(v.back()->connected());
  }
  return v;
}

// The start of a request that is never finished.
const std::string kHalfRequest =
    "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"prompt\":";

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";

int closed_count(const std::vector<std::unique_ptr<RawSocket>>& v, std::chrono::milliseconds w) {
  return static_cast<int>(
      std::count_if(v.begin(), v.end(), [&](const auto& s) { return s->closed_by_server(w); }));
}

// Real requests, each timed: /tokenize and a short completion, answered 200 within `bound`.
// Returns their latencies, in ms.
std::vector<double> real_requests(Running& s, int n, std::chrono::milliseconds bound) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    httplib::Client c = s.client();
    c.set_read_timeout(bound.count() / 1000, (bound.count() % 1000) * 1000);
    const auto t0 = Clock::now();
    auto r = i % 2 ? c.Post("/tokenize", R"({"content":"a"})", "application/json")
                   : c.Post("/v1/completions", R"({"prompt":[7, 8],"max_tokens":4,"seed":1})",
                            "application/json");
    const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    EXPECT_TRUE(r) << "request " << i << " not answered within " << bound.count() << " ms";
    if (r) {
      EXPECT_EQ(r->status, 200) << r->body;
    }
    EXPECT_LT(took, static_cast<double>(bound.count()));
    ms.push_back(took);
  }
  return ms;
}

TEST(ServeHardening, RealRequestsAreAnsweredWhile200SlowClientsSend) {
  Running s({}, 128, 64, 1024);
  auto slow = open_sockets(s.port(), 200);
  std::atomic<bool> done{false};
  std::atomic<int> rounds{0};
  std::thread drip([&] {  // one byte each every 300 ms: never a whole request
    for (size_t at = 0; !done; ++at) {
      for (auto& so : slow)
        so->send(std::string_view(kHalfRequest).substr(at % kHalfRequest.size(), 1));
      ++rounds;
      for (int i = 0; i < 30 && !done; ++i) std::this_thread::sleep_for(10ms);
    }
  });
  while (rounds < 3) std::this_thread::sleep_for(10ms);
  std::vector<double> ms = real_requests(s, 10, 5000ms);
  done = true;
  drip.join();
  std::sort(ms.begin(), ms.end());
  std::printf("latency of a real request with 200 slow clients open: median %.1f ms, max %.1f ms\n",
              ms[ms.size() / 2], ms.back());
  EXPECT_EQ(closed_count(slow, 0ms), 0) << "slow clients under the caps stay open";
}

TEST(ServeHardening, ConnectionCapsCloseIdleThenSlowConnectionsForRealOnes) {
  ServerOptions o;
  o.max_connections = 16;
  o.max_connections_per_peer = 8;
  Running s(o, 128, 64, 1024);
  auto kept = open_sockets(s.port(), 8);
  for (auto& k : kept) {  // a response each; the connections stay open, idle
    ASSERT_TRUE(k->send(kHealth));
    ASSERT_TRUE(k->read_response());
  }
  EXPECT_EQ(closed_count(kept, 0ms), 0);
  // (The server takes a connection back for its next request just after the response; only
  // then is it idle.)
  std::this_thread::sleep_for(200ms);
  auto half = open_sockets(s.port(), 40);
  for (auto& h : half) ASSERT_TRUE(h->send(kHalfRequest));
  real_requests(s, 4, 5000ms);
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_TRUE(kept[i]->closed_by_server(2000ms)) << "idle keep-alive connection " << i;
  EXPECT_GE(closed_count(half, 100ms), 40 - 8) << "then the oldest unfinished requests";
}

TEST(ServeHardening, ShutdownClosesIdleAndHalfReadConnectionsAtOnce) {
  Running s({}, 128, 64, 1024);
  auto silent = open_sockets(s.port(), 50);
  auto half = open_sockets(s.port(), 50);
  for (auto& h : half) ASSERT_TRUE(h->send(kHalfRequest));
  auto kept = open_sockets(s.port(), 20);
  for (auto& k : kept) {
    ASSERT_TRUE(k->send(kHealth));
    ASSERT_TRUE(k->read_response());
  }
  const auto t0 = Clock::now();
  s.server().shutdown();
  s.join();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(took, 2.0) << "shutdown took " << took << " s with 120 connections open";
  EXPECT_EQ(closed_count(silent, 1000ms) + closed_count(half, 1000ms) + closed_count(kept, 1000ms),
            120);
}

std::string chunk(std::string_view data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + std::string(data) + "\r\n";
}

TEST(ServeHardening, ChunkedBodiesCountAgainstMaxBody) {
  ServerOptions o;
  o.max_body = 4096;
  Running s(o, 128, 64, 1024);
  const std::string head =
      "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  RawSocket big(s.port());
  ASSERT_TRUE(big.send(head));
  // 5,000 bytes of data and no end: the answer comes without the rest.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(big.send(chunk(std::string(1000, ' '))));
  const auto r = big.read_response();
  ASSERT_TRUE(r) << "no answer to a chunked body over --max-body";
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Json::parse(r->body)["error"]["code"], "request_too_large");
  EXPECT_TRUE(big.closed_by_server(2000ms));
  // A client that sends on past the limit (200 kB in one go) gets its 413 too.
  RawSocket huge(s.port());
  std::string body = head;
  for (int i = 0; i < 200; ++i) body += chunk(std::string(1000, ' '));
  huge.send(body);  // (may fail part-way once the server has closed)
  const auto r2 = huge.read_response();
  ASSERT_TRUE(r2) << "the 413 was lost";
  EXPECT_EQ(r2->status, 413);
  // Within the limit, a chunked body is decoded.
  RawSocket ok(s.port());
  ASSERT_TRUE(
      ok.send(head + chunk(R"({"content":)") + chunk(R"("a)") + chunk(R"("})") + "0\r\n\r\n"));
  const auto tokens = ok.read_response();
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->status, 200) << tokens->body;
  EXPECT_EQ(Json::parse(tokens->body)["tokens"], Json::parse("[64]"));
}

TEST(ServeHardening, JsonNestedDeeperThan64LevelsIs400) {
  Running s({}, 128, 64, 1024);
  httplib::Client c = s.client();
  const auto body = [](int arrays) {  // the object is one level, each array one more
    return R"({"prompt":[7],"max_tokens":1,"x":)" + std::string(arrays, '[') +
           std::string(arrays, ']') + "}";
  };
  auto r = c.Post("/v1/completions", body(63), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Post("/v1/completions", body(64), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("nested deeper than 64"), std::string::npos) << r->body;
  r = c.Post("/tokenize", std::string(900'000, '['), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

TEST(ServeHardening, RangeNeverEnlargesThePage) {
  Running s({}, 128, 64, 1024);
  httplib::Client c = s.client();
  const auto page = c.Get("/");
  ASSERT_TRUE(page);
  std::string ranges = "bytes=0-";
  while (ranges.size() < 8000) ranges += ",0-";
  const auto r = c.Get("/", {{"Range", ranges}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, page->body);
}

TEST(ServeHardening, HeadAnswersTheGetHeadersWithoutTheBody) {
  Running s({}, 128, 64, 1024);
  httplib::Client c = s.client();
  c.set_keep_alive(true);
  const auto page = c.Get("/");
  ASSERT_TRUE(page);
  const auto head = c.Head("/");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->get_header_value("Content-Length"), std::to_string(page->body.size()));
  EXPECT_TRUE(head->body.empty());
  // A body sent after the head would be read as the next response's start.
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(Json::parse(health->body)["status"], "ok");
}

TEST(ServeHardening, PipelinedRequestsAreAnsweredInOrder) {
  Running s({}, 128, 64, 1024);
  RawSocket so(s.port());
  const std::string tokenize =
      "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n\r\n"
      R"({"content":"a"})";
  ASSERT_TRUE(so.send(kHealth + tokenize + "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto health = so.read_response(), tokens = so.read_response(), models = so.read_response();
  ASSERT_TRUE(health && tokens && models) << "not every pipelined request was answered";
  EXPECT_EQ(Json::parse(health->body)["status"], "ok");
  EXPECT_EQ(Json::parse(tokens->body)["tokens"], Json::parse("[64]"));
  EXPECT_EQ(Json::parse(models->body)["object"], "list");
}

TEST(ServeHardening, UsageNeverRepeatsThePreviousRequestsCount) {
  ServerOptions o;
  o.slots = 1;  // both requests in the same slot
  Running s(o, 128, 64, 1024);
  httplib::Client c = s.client();
  auto r =
      c.Post("/v1/completions", R"({"prompt":[7],"max_tokens":12,"seed":1})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["usage"]["completion_tokens"], 12);
  for (const char* stream : {"false", "true"}) {
    r = c.Post("/v1/completions",
               R"({"prompt":[7],"max_tokens":0,"stream":)" + std::string(stream) + "}",
               "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const size_t usage = r->body.find("\"completion_tokens\":");
    ASSERT_NE(usage, std::string::npos) << r->body;
    EXPECT_EQ(r->body.substr(usage, 21), "\"completion_tokens\":0") << stream << ": " << r->body;
  }
}

TEST(ServeHardening, EmptyPromptsAndControlBytesInHeadersAreRefused) {
  ServerOptions o;
  o.api_key = "sesame";
  Running s(o, 128, 64, 1024);
  httplib::Client c = s.client();
  c.set_bearer_token_auth("sesame");
  for (const char* body : {R"({"prompt":""})", R"({"prompt":[[]]})", R"({"prompt":["a",""]})"}) {
    const auto r = c.Post("/v1/completions", body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_EQ(Json::parse(r->body)["error"]["param"], "prompt") << body;
  }
  const std::string models = "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ";
  for (const std::string& key : {"sesame\0"s, "ses\0ame"s, "sesame\x01"s}) {
    RawSocket so(s.port());
    ASSERT_TRUE(so.send(models + key + "\r\n\r\n"));
    const auto r = so.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
  }
  RawSocket so(s.port());
  ASSERT_TRUE(so.send(models + "sesame\r\n\r\n"));
  const auto r = so.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::serve
