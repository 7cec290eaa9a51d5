#include "tinylm/serve/http/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tinylm/core/error.h"

namespace tinylm::serve::http {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kReadBytes = 64 * 1024;  // per read of a ready connection
constexpr int kReservedFiles = 64;        // open files kept for the model, logs, ...
constexpr milliseconds kDrain{1000};      // how long a refused request's rest is read

struct Conn {
  int fd = -1;
  std::string peer;      // the client's address, without its port
  uint64_t started = 0;  // order of the accept or of the current request's first byte
  std::string in;        // received, not yet parsed
  size_t need = 0;       // parse again once `in` holds this many bytes
  bool busy = false;     // a worker is answering it
  bool kept = false;     // waiting for the next request after a response
  bool sent_continue = false;
  // Refused mid-request: its answer is sent and its writing side shut; what the client still
  // sends is read and dropped for a moment, so closing does not reset the connection (which
  // could discard the answer before the client reads it).
  bool draining = false;
  Clock::time_point deadline;
};

// A request for a worker: whole, or refused by the parser.
struct Task {
  Conn* conn = nullptr;
  ParseResult parsed;
};

std::string peer_address(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
  } else if (a.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
  }
  return text;
}

// Raises the soft open-file limit to the hard one; returns the soft limit.
int64_t raise_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit want = r;
    want.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) r = want;
  }
  return r.rlim_cur == RLIM_INFINITY ? int64_t{1} << 30 : static_cast<int64_t>(r.rlim_cur);
}

}  // namespace

struct HttpServer::Impl {
  HttpOptions opt;
  Handler handler;
  ErrorHandler on_error;
  int listen_fd = -1;
  int wake_fd = -1;
  int max_connections = 0;

  // Event loop's own.
  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // by socket
  std::unordered_map<std::string, int> per_peer;
  uint64_t serial = 0;
  int busy = 0;
  Clock::time_point accept_paused_until{};
  std::atomic<int> open{0};

  // Shared with the workers.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Task> tasks;
  struct Answered {
    Conn* conn;
    bool keep;   // for the next request
    bool drain;  // refused before its end: drain, then close
  };
  std::vector<Answered> returned;
  bool quit = false;
  std::atomic<bool> stopping{false};
  std::vector<std::thread> workers;

  Impl(HttpOptions o, Handler h, ErrorHandler e)
      : opt(std::move(o)), handler(std::move(h)), on_error(std::move(e)) {
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    check(wake_fd >= 0, "serve: eventfd: ", std::strerror(errno));
  }
  ~Impl() {
    for (auto& [fd, c] : conns) ::close(fd);
    if (listen_fd >= 0) ::close(listen_fd);
    ::close(wake_fd);
  }

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  int bind() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(opt.port);
    if (getaddrinfo(opt.host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
    for (addrinfo* a = found; a && listen_fd < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      const int yes = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
        listen_fd = fd;
      } else {
        ::close(fd);
      }
    }
    freeaddrinfo(found);
    if (listen_fd < 0) return -1;
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
    const int64_t files = raise_file_limit();
    max_connections =
        static_cast<int>(std::clamp<int64_t>(files - kReservedFiles, 1, opt.max_connections));
    return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                             : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  }

  // ---- Workers ----

  void work() {
    for (;;) {
      Task t;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return quit || !tasks.empty(); });
        if (tasks.empty()) return;
        t = std::move(tasks.front());
        tasks.pop_front();
      }
      const bool keep = answer(t);
      {
        std::lock_guard lock(mu);
        returned.push_back({t.conn, keep, t.parsed.status == ParseStatus::error});
      }
      wake();
    }
  }

  // Answers the task's request; returns whether the connection may serve another.
  bool answer(Task& t) {
    Response res;
    const Request& req = t.parsed.request;
    bool keep = false;
    if (t.parsed.status == ParseStatus::complete) {
      try {
        if (req.method == "HEAD") {  // answered as GET, then sent without the body
          Request get = req;
          get.method = "GET";
          handler(get, res);
          res.head_only = true;
        } else {
          handler(req, res);
        }
      } catch (const std::exception& e) {  // (the handler reports its own errors)
        res = Response{};
        on_error(req, 500, e.what(), res);
      }
      keep = req.keep_alive && !stopping;
    } else {
      on_error(req, t.parsed.error_status, t.parsed.error, res);
    }
    return write_response(t.conn->fd, res, req.minor_version, &keep, opt.write_timeout) && keep;
  }

  // ---- Event loop ----

  void close_conn(Conn* c) {
    ::close(c->fd);
    if (--per_peer[c->peer] == 0) per_peer.erase(c->peer);
    conns.erase(c->fd);  // (frees c)
    open = static_cast<int>(conns.size());
  }

  // Sends a small answer without waiting (a client that does not read it loses it).
  void send_now(Conn* c, int status, const std::string& what) {
    Response res;
    on_error(Request{}, status, what, res);
    const std::string bytes = response_head(res, false, false) + res.body;
    [[maybe_unused]] const ssize_t n =
        ::send(c->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void dispatch(Conn* c, ParseResult parsed) {
    c->busy = true;
    c->need = 0;
    c->sent_continue = false;
    ++busy;
    {
      std::lock_guard lock(mu);
      tasks.push_back(Task{c, std::move(parsed)});
    }
    cv.notify_one();
  }

  // Parses what the connection has received: a whole request (or a refusal) goes to a worker.
  void try_parse(Conn* c) {
    if (c->in.empty() || c->in.size() < c->need) return;
    ParseResult p = parse_request(c->in, opt.limits);
    if (p.status == ParseStatus::incomplete) {
      c->need = p.need;
      if (p.headers_done && !c->sent_continue && p.request.header("Expect") == "100-continue") {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] const ssize_t n =
            ::send(c->fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        c->sent_continue = true;
      }
      return;
    }
    if (p.status == ParseStatus::complete) c->in.erase(0, p.consumed);
    dispatch(c, std::move(p));
  }

  void read_from(Conn* c) {
    char buf[kReadBytes];
    const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {  // the client closed (an unfinished request has no one to answer) or failed
      close_conn(c);
      return;
    }
    if (c->draining) return;
    if (c->kept && c->in.empty()) {  // the next request's first byte: its deadline starts
      c->kept = false;
      c->started = ++serial;
      c->deadline = Clock::now() + opt.request_timeout;
    }
    c->in.append(buf, static_cast<size_t>(n));
    try_parse(c);
  }

  // The connection to close for a new one from `peer`: an idle keep-alive connection, else the
  // one whose request started first; from `peer` only when it is at its own cap, else from the
  // peer with most connections. Null when every connection is being answered.
  Conn* victim(const std::string* peer) {
    Conn* best = nullptr;
    const auto rank = [&](const Conn* c) {
      return std::make_tuple((c->kept && c->in.empty()) || c->draining ? 0 : 1,
                             peer ? 0 : -per_peer[c->peer], c->started);
    };
    for (auto& [fd, c] : conns) {
      if (c->busy || (peer && c->peer != *peer)) continue;
      if (!best || rank(c.get()) < rank(best)) best = c.get();
    }
    return best;
  }

  bool make_room(const std::string& peer) {
    if (per_peer.count(peer) && per_peer[peer] >= opt.max_connections_per_peer) {
      Conn* v = victim(&peer);
      if (!v) return false;
      close_conn(v);
    }
    if (static_cast<int>(conns.size()) >= max_connections) {
      Conn* v = victim(nullptr);
      if (!v) return false;
      close_conn(v);
    }
    return true;
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        // Out of files or memory: the backlog waits a little instead of spinning the loop.
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          accept_paused_until = Clock::now() + milliseconds(100);
        return;
      }
      std::string peer = peer_address(addr);
      if (!make_room(peer)) {
        ::close(fd);
        continue;
      }
      const int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->peer = std::move(peer);
      c->started = ++serial;
      c->deadline = Clock::now() + opt.request_timeout;
      ++per_peer[c->peer];
      conns.emplace(fd, std::move(c));
      open = static_cast<int>(conns.size());
    }
  }

  // Connections the workers have answered: kept for their next request (maybe buffered
  // already: pipelined) or closed.
  void take_back() {
    std::vector<Answered> back;
    {
      std::lock_guard lock(mu);
      back.swap(returned);
    }
    for (auto [c, keep, drain] : back) {
      --busy;
      c->busy = false;
      if (drain && !stopping) {
        ::shutdown(c->fd, SHUT_WR);
        c->draining = true;
        c->in.clear();
        c->deadline = Clock::now() + kDrain;
        continue;
      }
      if (!keep || stopping) {
        close_conn(c);
        continue;
      }
      c->kept = true;
      c->started = ++serial;
      c->deadline = Clock::now() + (c->in.empty() ? opt.idle_timeout : opt.request_timeout);
      if (!c->in.empty()) c->kept = false;
      try_parse(c);
    }
  }

  // Closes the connections past their deadline: idle ones quietly, unfinished requests with a
  // 408. Returns the time to the next deadline.
  milliseconds expire(Clock::time_point now) {
    Clock::time_point next = now + milliseconds(1000);
    std::vector<Conn*> late;
    for (auto& [fd, c] : conns) {
      if (c->busy) continue;
      if (c->deadline <= now) {
        late.push_back(c.get());
      } else {
        next = std::min(next, c->deadline);
      }
    }
    for (Conn* c : late) {
      if (!c->in.empty()) send_now(c, 408, "the request did not arrive in time");
      close_conn(c);
    }
    return std::chrono::ceil<milliseconds>(next - now);
  }

  void run() {
    for (int i = 0; i < opt.threads; ++i) workers.emplace_back([this] { work(); });
    std::vector<pollfd> fds;
    std::vector<int> polled;
    Clock::time_point stop_at{};
    bool stopped = false, cut = false;
    for (;;) {
      Clock::time_point now = Clock::now();
      if (stopping && !stopped) {  // stop listening; close every connection not being answered
        stopped = true;
        stop_at = now;
        ::close(listen_fd);
        listen_fd = -1;
        std::vector<Conn*> quiet;
        for (auto& [fd, c] : conns) {
          if (!c->busy) quiet.push_back(c.get());
        }
        for (Conn* c : quiet) close_conn(c);
      }
      if (stopped && busy == 0) break;
      if (stopped && !cut && now - stop_at >= opt.stop_grace) {
        cut = true;  // responses to clients that do not read them end now
        for (auto& [fd, c] : conns) ::shutdown(fd, SHUT_RDWR);
      }
      const milliseconds wait = stopped ? milliseconds(50) : expire(now);
      fds.clear();
      polled.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      if (listen_fd >= 0 && now >= accept_paused_until) fds.push_back({listen_fd, POLLIN, 0});
      for (auto& [fd, c] : conns) {
        if (c->busy) continue;
        fds.push_back({fd, POLLIN, 0});
        polled.push_back(fd);
      }
      const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
      if (ready < 0 && errno != EINTR) fail("serve: poll: ", std::strerror(errno));
      if (ready <= 0) continue;
      if (fds[0].revents) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t n = ::read(wake_fd, &count, sizeof count);
      }
      take_back();
      const size_t first_conn = fds.size() - polled.size();
      for (size_t i = 0; i < polled.size(); ++i) {
        if (!fds[first_conn + i].revents) continue;
        const auto it = conns.find(polled[i]);
        if (it != conns.end() && !it->second->busy) read_from(it->second.get());
      }
      if (first_conn == 2 && fds[1].revents && listen_fd >= 0) accept_all();
    }
    {
      std::lock_guard lock(mu);
      quit = true;
    }
    cv.notify_all();
    for (std::thread& w : workers) w.join();
    workers.clear();
    std::vector<Conn*> rest;
    for (auto& [fd, c] : conns) rest.push_back(c.get());
    for (Conn* c : rest) close_conn(c);
  }
};

HttpServer::HttpServer(HttpOptions options, Handler handler, ErrorHandler on_error)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(on_error))) {}

HttpServer::~HttpServer() = default;

int HttpServer::bind() { return impl_->bind(); }

void HttpServer::run() { impl_->run(); }

void HttpServer::stop() {
  impl_->stopping = true;
  impl_->wake();
}

int HttpServer::connections() const { return impl_->open; }

}  // namespace tinylm::serve::http
