#include "tinylm/serve/server.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tinylm/core/error.h"
#include "tinylm/serve/api_error.h"
#include "tinylm/serve/engine.h"
#include "tinylm/serve/http/http_server.h"
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

void reply(http::Response& res, int status, const Json& body) {
  res.status = status;
  res.content_type = "application/json";
  res.body = dump(body);
}

void reply_error(http::Response& res, const ApiError& e) { reply(res, e.status, error_body(e)); }

http::HttpOptions http_options(const ServerOptions& o) {
  http::HttpOptions h;
  h.host = o.host;
  h.port = o.port;
  // One worker per request being answered: enough for every slot, the whole queue, and the
  // cheap endpoints beside them. Connections that are still sending hold no worker.
  h.threads = o.slots + o.queue + 8;
  h.limits.max_body = o.max_body;
  h.max_connections = o.max_connections;
  h.max_connections_per_peer = o.max_connections_per_peer;
  h.request_timeout = o.request_timeout;
  h.idle_timeout = o.idle_timeout;
  return h;
}

// One generation request from submission to its last byte.
struct Generation {
  ResponseHead head;
  bool stream = false;
  bool include_usage = false;  // a last chunk with only usage (stream_options)
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
  http::HttpServer http;
  std::atomic<int> in_flight{0};
  std::atomic<bool> closing{false};
  std::mutex rng_mu;
  std::mt19937_64 rng{std::random_device{}()};
  const int64_t started = static_cast<int64_t>(std::time(nullptr));

  Impl(generate::DecodeBackend& b, const ModelInfo& m, ServerOptions o)
      : backend(b),
        model(m),
        opt(std::move(o)),
        metrics(opt.slots),
        engine(b, *m.tokenizer, EngineOptions{opt.slots, opt.queue, m.eos_id, false}, metrics),
        http(
            http_options(opt),
            [this](const http::Request& req, http::Response& res) { handle(req, res); },
            [this](const http::Request& req, int status, const std::string& what,
                   http::Response& res) { refused(req, status, what, res); }) {}

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

  bool authorized(const http::Request& req) const {
    if (opt.api_key.empty()) return true;
    return constant_time_equal(req.header("Authorization"), "Bearer " + opt.api_key);
  }

  void count(const std::string& path, int status) {
    metrics.count_request(kEndpoints.count(path) ? path : "other", status);
  }

  // A whole request, on one of the HTTP layer's workers.
  void handle(const http::Request& req, http::Response& res) {
    try {
      route(req, res);
    } catch (const ApiError& e) {
      res = http::Response{};
      reply_error(res, e);
    } catch (const std::exception& e) {
      res = http::Response{};
      reply_error(res, ApiError(500, "server_error", e.what()));
    }
    count(req.path, res.status);
  }

  // A request the HTTP layer refused before it was whole (malformed, too large, too slow).
  void refused(const http::Request& req, int status, const std::string& what, http::Response& res) {
    if (status == 413) {
      reply_error(res, ApiError(413, "invalid_request_error",
                                cat("the request body is larger than ", opt.max_body,
                                    " bytes (--max-body)", what == "body too large" ? "" : ": ",
                                    what == "body too large" ? "" : what),
                                "", "request_too_large"));
    } else {
      reply_error(res, ApiError(status, "invalid_request_error", "HTTP: " + what));
    }
    count(req.path, status);
  }

  void route(const http::Request& req, http::Response& res) {
    const std::string& path = req.path;
    if (path != "/" && path != "/health" && !authorized(req)) {
      throw ApiError(401, "invalid_request_error",
                     "missing or incorrect API key (send 'Authorization: Bearer KEY')", "",
                     "invalid_api_key");
    }
    if (req.method == "GET" && path == "/") {
      // The whole page whatever Range asks for: it is small, and a range answer is optional.
      res.content_type = "text/html; charset=utf-8";
      res.body = std::string(web_page());
    } else if (req.method == "GET" && path == "/health") {
      reply(res, closing ? 503 : 200, Json{{"status", closing ? "shutting down" : "ok"}});
    } else if (req.method == "GET" && path == "/metrics") {
      res.content_type = "text/plain; version=0.0.4";
      res.body = metrics.prometheus();
    } else if (req.method == "GET" && path == "/v1/models") {
      // The id first, then each alias: all name the one model.
      Json data = Json::array();
      std::vector<std::string> names{model.id};
      names.insert(names.end(), model.aliases.begin(), model.aliases.end());
      for (const std::string& name : names) {
        data.push_back(Json{{"id", name},
                            {"object", "model"},
                            {"created", started},
                            {"owned_by", "tinylm"},
                            {"context_length", model.context}});
      }
      reply(res, 200, Json{{"object", "list"}, {"data", data}});
    } else if (req.method == "POST" && path == "/tokenize") {
      reply(res, 200, Json{{"tokens", parse_tokenize(req.body, model)}});
    } else if (req.method == "POST" && path == "/detokenize") {
      const std::vector<int> ids = parse_detokenize(req.body, model);
      reply(res, 200, Json{{"content", sanitize_utf8(model.tokenizer->decode(ids))}});
    } else if (req.method == "POST" && path == "/v1/completions") {
      start(res, parse_completion(req.body, model, random64()));
    } else if (req.method == "POST" && path == "/v1/chat/completions") {
      start(res, parse_chat(req.body, model, random64()));
    } else {
      throw ApiError(404, "invalid_request_error", cat("no endpoint ", req.method, " ", path), "",
                     "not_found");
    }
  }

  void start(http::Response& res, const CompletionRequest& r) {
    auto g = std::make_shared<Generation>();
    g->head = {new_id(r.chat ? "chatcmpl-" : "cmpl-"), static_cast<int64_t>(std::time(nullptr)),
               model.id, r.chat};
    g->stream = r.params.stream;
    g->include_usage = r.params.include_usage;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(opt.timeout_s));
    // (A response sent whole needs only the end.)
    const auto bell = std::make_shared<Bell>(g->stream ? opt.stream_interval : Bell::kEndsOnly);
    // Each prompt's n choices, choice i seeded with seed + i: each the same bits as that
    // request alone with that seed.
    for (const Prompt& p : r.prompts) {
      for (int i = 0; i < r.params.n; ++i) {
        GenParams params = r.params;
        params.sampling.seed += static_cast<uint64_t>(i);
        g->jobs.push_back(std::make_shared<Job>(p, params, deadline, bell));
      }
      g->usage.prompt_tokens += static_cast<int64_t>(p.ids.size());
    }
    g->choices.resize(g->jobs.size());
    engine.submit(g->jobs);  // 429 / 503 before anything is sent
    ++in_flight;
    res.content_type = g->stream ? "text/event-stream" : "application/json";
    if (g->stream) res.headers.push_back({"Cache-Control", "no-cache"});
    res.stream = [this, g](http::Sink& sink) {
      if (write_response(*g, sink)) return true;
      g->cancel();
      return false;
    };
    res.done = [this, g](bool whole) {
      if (!whole) g->cancel();
      --in_flight;
    };
  }

  // Writes the whole response as the choices produce it; false when the client is gone.
  bool write_response(Generation& g, http::Sink& sink) {
    const BpeTokenizer& tok = *model.tokenizer;
    const auto send = [&](const std::string& s) { return sink.write(s); };
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
          if (remaining == 0 && !g.include_usage) usage = &g.usage;
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
      if (!sink.client_alive()) return false;
      if (!news) bell.wait(seen, kPoll);
    }
    if (g.stream && g.include_usage && !event(usage_chunk(g.head, g.usage))) return false;
    if (g.stream) return send("data: [DONE]\n\n");
    return send(dump(completion_body(g.head, g.choices, g.usage, tok)));
  }
};

Server::Server(generate::DecodeBackend& backend, const ModelInfo& model, ServerOptions options)
    : impl_(std::make_unique<Impl>(backend, model, std::move(options))) {}

Server::~Server() = default;

int Server::bind() {
  const ServerOptions& o = impl_->opt;
  const int port = impl_->http.bind();
  check(port > 0, "serve: cannot listen on ", o.host, ":", o.port,
        " (in use, or not an address of this machine)");
  return port;
}

void Server::run() {
  std::thread http([this] {
    try {
      impl_->http.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tinylm serve: %s\n", e.what());
    }
    impl_->engine.stop();  // (also when serving failed: run() must not wait forever)
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
}

}  // namespace tinylm::serve
