#include "tinylm/serve/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tinylm/core/error.h"
#include "tinylm/serve/api_error.h"
#include "tinylm/serve/engine.h"
#include "tinylm/serve/metrics.h"
#include "tinylm/serve/responses.h"
#include "tinylm/serve/web/web_page.h"

namespace tinylm::serve {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer string is read whatever the contents; only the lengths (not
  // secret in practice) decide how many.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

namespace {

using namespace std::chrono_literals;

const std::set<std::string> kEndpoints = {"/",          "/health",         "/metrics",
                                          "/v1/models", "/v1/completions", "/v1/chat/completions",
                                          "/tokenize",  "/detokenize"};

// How long the response writer waits for news before looking again, and how long a quiet
// connection goes before a probe shows whether the client is still there.
constexpr auto kPoll = 20ms;
// (A write to a closed connection fails only the second time, so the probe runs often.)
constexpr auto kProbeEvery = 250ms;

void reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) { reply(res, e.status, error_body(e)); }

// One generation request from submission to its last byte.
struct Generation {
  ResponseHead head;
  bool stream = false;
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<ChoiceText> choices;
  Usage usage;
  void cancel() {
    for (auto& j : jobs) j->cancel();
  }
};

}  // namespace

struct Server::Impl {
  generate::DecodeBackend& backend;
  ModelInfo model;
  ServerOptions opt;
  Metrics metrics;
  Engine engine;
  httplib::Server http;
  std::atomic<int> in_flight{0};
  int listen_fd = -1;
  std::atomic<bool> closing{false};
  std::mutex rng_mu;
  std::mt19937_64 rng{std::random_device{}()};
  const int64_t started = static_cast<int64_t>(std::time(nullptr));

  Impl(generate::DecodeBackend& b, const ModelInfo& m, ServerOptions o)
      : backend(b),
        model(m),
        opt(std::move(o)),
        metrics(opt.slots),
        engine(b, *m.tokenizer, EngineOptions{opt.slots, opt.queue, m.eos_id, false}, metrics) {
    // One thread per connection being answered: enough for every slot, the whole queue, and
    // the cheap endpoints beside them.
    const size_t threads = static_cast<size_t>(opt.slots + opt.queue + 8);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http.set_payload_max_length(opt.max_body);
    http.set_read_timeout(10, 0);
    http.set_write_timeout(10, 0);
    http.set_keep_alive_timeout(2);
    // httplib listens with a backlog of 5, so a burst of clients overflows the accept queue
    // and some see their connection reset: the listening socket is kept here and given a
    // backlog of 1,024 once bound.
    http.set_socket_options([this](socket_t sock) {
      const int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = sock;
    });
    routes();
  }

  uint64_t random64() {
    std::lock_guard lock(rng_mu);
    return rng();
  }

  std::string new_id(const char* prefix) {
    static const char* hex = "0123456789abcdef";
    std::string id = prefix;
    for (uint64_t r = random64(), i = 0; i < 16; ++i, r >>= 4) id += hex[r & 15];
    return id;
  }

  bool authorized(const httplib::Request& req) const {
    if (opt.api_key.empty()) return true;
    return constant_time_equal(req.get_header_value("Authorization"), "Bearer " + opt.api_key);
  }

  void routes() {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/" || req.path == "/health" || authorized(req))
        return httplib::Server::HandlerResponse::Unhandled;
      reply_error(res, ApiError(401, "invalid_request_error",
                                "missing or incorrect API key (send 'Authorization: Bearer KEY')",
                                "", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
    // Statuses httplib sets itself (no route, body too large, a malformed request) get an
    // OpenAI error object too.
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) {
        reply_error(res, ApiError(404, "invalid_request_error",
                                  cat("no endpoint ", req.method, " ", req.path), "", "not_found"));
      } else if (res.status == 413) {
        reply_error(res, ApiError(413, "invalid_request_error",
                                  cat("the request body is larger than ", opt.max_body,
                                      " bytes (--max-body)"),
                                  "", "request_too_large"));
      } else {
        reply_error(res,
                    ApiError(res.status, "invalid_request_error", cat("HTTP status ", res.status)));
      }
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          try {
            std::rethrow_exception(ep);
          } catch (const ApiError& e) {
            reply_error(res, e);
          } catch (const std::exception& e) {
            reply_error(res, ApiError(500, "server_error", e.what()));
          }
        });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      metrics.count_request(kEndpoints.count(req.path) ? req.path : "other", res.status);
    });

    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(web_page()), "text/html; charset=utf-8");
    });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (closing) {
        reply(res, 503, Json{{"status", "shutting down"}});
      } else {
        reply(res, 200, Json{{"status", "ok"}});
      }
    });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.prometheus(), "text/plain; version=0.0.4");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      const Json entry{{"id", model.id},
                       {"object", "model"},
                       {"created", started},
                       {"owned_by", "tinylm"},
                       {"context_length", model.context}};
      reply(res, 200, Json{{"object", "list"}, {"data", Json::array({entry})}});
    });
    http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      reply(res, 200, Json{{"tokens", parse_tokenize(req.body, model)}});
    });
    http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      const std::vector<int> ids = parse_detokenize(req.body, model);
      reply(res, 200, Json{{"content", sanitize_utf8(model.tokenizer->decode(ids))}});
    });
    http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      start(res, parse_completion(req.body, model, random64()));
    });
    http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      start(res, parse_chat(req.body, model, random64()));
    });
  }

  void start(httplib::Response& res, const CompletionRequest& r) {
    auto g = std::make_shared<Generation>();
    g->head = {new_id(r.chat ? "chatcmpl-" : "cmpl-"), static_cast<int64_t>(std::time(nullptr)),
               model.id, r.chat};
    g->stream = r.params.stream;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(opt.timeout_s));
    // (A response sent whole needs only the end.)
    const auto bell = std::make_shared<Bell>(g->stream ? opt.stream_interval : Bell::kEndsOnly);
    for (const Prompt& p : r.prompts) {
      g->jobs.push_back(std::make_shared<Job>(p, r.params, deadline, bell));
      g->usage.prompt_tokens += static_cast<int64_t>(p.ids.size());
    }
    g->choices.resize(g->jobs.size());
    engine.submit(g->jobs);  // 429 / 503 before anything is sent
    ++in_flight;
    const auto done = [this, g](bool success) {
      if (!success) g->cancel();
      --in_flight;
    };
    const auto provider = [this, g](size_t, httplib::DataSink& sink) {
      if (!write_response(*g, sink)) {
        g->cancel();
        return false;
      }
      sink.done();
      return true;
    };
    res.set_chunked_content_provider(g->stream ? "text/event-stream" : "application/json", provider,
                                     done);
    if (g->stream) res.set_header("Cache-Control", "no-cache");
  }

  // Writes the whole response as the choices produce it; false when the client is gone.
  bool write_response(Generation& g, httplib::DataSink& sink) {
    const BpeTokenizer& tok = *model.tokenizer;
    const auto send = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    const auto event = [&](const Json& j) { return send("data: " + dump(j) + "\n\n"); };
    const size_t n = g.jobs.size();
    if (g.stream && g.head.chat) {
      for (size_t i = 0; i < n; ++i) {
        if (!event(chat_role_chunk(g.head, static_cast<int>(i)))) return false;
      }
    }
    std::vector<bool> done(n, false);
    size_t remaining = n;
    auto quiet_since = Clock::now();
    Bell& bell = g.jobs.front()->bell();
    while (remaining > 0) {
      bool news = false;
      const uint64_t seen = bell.rings();
      for (size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        Delta d;
        const bool finished = g.jobs[i]->take(d);
        if (d.text.empty() && d.logprobs.empty() && !finished) continue;
        news = true;
        const size_t first = g.choices[i].logprobs.size();
        g.choices[i].add(d, tok);
        const Usage* usage = nullptr;
        if (finished) {
          done[i] = true;
          --remaining;
          g.usage.completion_tokens += d.completion_tokens;
          if (remaining == 0) usage = &g.usage;
        }
        if (g.stream &&
            !event(chunk_body(g.head, static_cast<int>(i), d.text, g.choices[i], first,
                              finished ? g.choices[i].finish_reason : std::string(), usage, tok))) {
          return false;
        }
      }
      const auto now = Clock::now();
      if (news) {
        quiet_since = now;
      } else if (now - quiet_since > kProbeEvery) {
        // A comment line (SSE) or whitespace before the JSON: both are ignored by clients,
        // and the write fails once the client has gone.
        if (!send(g.stream ? ": waiting\n\n" : " ")) return false;
        quiet_since = now;
      }
      if (!sink.is_writable()) return false;
      if (!news) bell.wait(seen, kPoll);
    }
    if (g.stream) return send("data: [DONE]\n\n");
    return send(dump(completion_body(g.head, g.choices, g.usage, tok)));
  }
};

Server::Server(generate::DecodeBackend& backend, const ModelInfo& model, ServerOptions options)
    : impl_(std::make_unique<Impl>(backend, model, std::move(options))) {}

Server::~Server() = default;

int Server::bind() {
  const ServerOptions& o = impl_->opt;
  int port = o.port;
  if (port == 0) {
    port = impl_->http.bind_to_any_port(o.host);
  } else if (!impl_->http.bind_to_port(o.host, port)) {
    port = -1;
  }
  check(port > 0, "serve: cannot listen on ", o.host, ":", o.port,
        " (in use, or not an address of this machine)");
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, 1024);
  return port;
}

void Server::run() {
  std::thread http([this] {
    impl_->http.listen_after_bind();
    impl_->engine.stop();  // (also when listening failed: run() must not wait forever)
  });
  impl_->engine.run();
  http.join();
}

void Server::shutdown() {
  impl_->closing = true;
  impl_->engine.close();
  impl_->engine.wait_idle();
  while (impl_->in_flight > 0) std::this_thread::sleep_for(10ms);
  impl_->http.stop();
  impl_->engine.stop();
}

}  // namespace tinylm::serve
