#include "tinylm/serve/http/response.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

namespace tinylm::serve::http {

namespace {

using Clock = std::chrono::steady_clock;

const char* reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 416:
      return "Range Not Satisfiable";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

class SocketSink : public Sink {
 public:
  SocketSink(int fd, bool chunked, std::chrono::milliseconds timeout)
      : fd_(fd), chunked_(chunked), timeout_(timeout) {}
  bool write(std::string_view data) override {
    if (data.empty()) return true;  // (an empty chunk would end the body)
    if (!chunked_) return write_all(fd_, data, timeout_);
    char size[24];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk(size, static_cast<size_t>(n));
    chunk.append(data);
    chunk += "\r\n";
    return write_all(fd_, chunk, timeout_);
  }
  bool client_alive() override { return socket_alive(fd_); }

 private:
  int fd_;
  bool chunked_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::string response_head(const Response& res, bool chunked, bool keep_alive) {
  std::string h = "HTTP/1.1 " + std::to_string(res.status) + " " + reason(res.status) + "\r\n";
  if (!res.content_type.empty()) h += "Content-Type: " + res.content_type + "\r\n";
  for (const Header& x : res.headers) h += x.name + ": " + x.value + "\r\n";
  if (chunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else if (!res.stream) {
    h += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

bool write_all(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  const Clock::time_point end = Clock::now() + timeout;
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
  }
  return true;
}

bool socket_alive(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) < 0) return errno == EINTR;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  if (!(p.revents & POLLIN)) return true;
  // Readable: pipelined bytes (alive) or the end of the stream (gone).
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

bool write_response(int fd, Response& res, int minor_version, bool* keep_alive,
                    std::chrono::milliseconds timeout) {
  const bool chunked = res.stream && minor_version == 1;
  if (res.stream && !chunked) *keep_alive = false;
  bool whole = false;
  if (res.head_only) {
    whole = write_all(fd, response_head(res, false, *keep_alive), timeout);
  } else if (!res.stream) {
    whole = write_all(fd, response_head(res, false, *keep_alive) + res.body, timeout);
  } else if (write_all(fd, response_head(res, chunked, *keep_alive), timeout)) {
    SocketSink sink(fd, chunked, timeout);
    whole = res.stream(sink) && (!chunked || write_all(fd, "0\r\n\r\n", timeout));
  }
  if (res.done) res.done(whole);
  return whole;
}

}  // namespace tinylm::serve::http
