// tinylm serve: an OpenAI-compatible HTTP server over a GPT-2 or EvermindLM model
// (docs/serve.md). SIGINT / SIGTERM stop it cleanly: new generations are refused, those queued
// or running finish and are answered, and it exits 0; a second signal ends it at once.
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "int_flags.h"
#include "model_kind.h"
#include "tinylm/core/error.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/serve/server.h"

namespace tinylm::cli {

namespace {

struct ServeFlags {
  std::string arch, name;
  std::vector<std::string> aliases;
  ModelFlags model;
  serve::ServerOptions server;
  int ctx = 0;
  double max_body_mb = 1.0;
  int stream_interval_ms = static_cast<int>(serve::ServerOptions{}.stream_interval.count());
};

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void run_serve(ServeFlags& f) {
  if (f.server.slots < 1 || f.server.slots > 256) throw UsageError("--slots must be in 1..256");
  if (f.server.queue < 0 || f.server.queue > 4096) throw UsageError("--queue must be in 0..4096");
  for (const std::string& alias : f.aliases) {
    if (alias.empty()) throw UsageError("--alias must not be empty");
  }
  if (f.server.port < 0 || f.server.port > 65535) throw UsageError("--port must be in 0..65535");
  if (!(f.server.timeout_s > 0)) throw UsageError("--timeout must be > 0 seconds");
  if (!(f.max_body_mb > 0 && f.max_body_mb <= 1024))
    throw UsageError("--max-body must be in (0, 1024] MB");
  f.server.max_body = static_cast<size_t>(f.max_body_mb * 1e6);
  if (f.stream_interval_ms < 0 || f.stream_interval_ms > 1000)
    throw UsageError("--stream-interval must be in 0..1000 ms");
  f.server.stream_interval = std::chrono::milliseconds(f.stream_interval_ms);
  if (f.server.max_connections < 1 || f.server.max_connections > 65536)
    throw UsageError("--max-connections must be in 1..65536");
  if (f.server.max_connections_per_peer < 1 ||
      f.server.max_connections_per_peer > f.server.max_connections)
    throw UsageError("--max-connections-per-peer must be in 1..--max-connections");
  if (f.server.api_key.empty()) {
    if (const char* key = std::getenv("TINYLM_API_KEY")) f.server.api_key = key;
  }
  const DetectedModel d =
      resolve_model("serve", f.model.model, f.arch, families::those(families::decodes));

  // SIGINT and SIGTERM go to the thread below alone: blocked here, before any other thread
  // (OpenMP's, the engine's, the HTTP pool's) exists and inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a signal

  check_load_flags(f.model, d, "runs");
  const BpeTokenizer tok = load_model_tokenizer(f.model, d);
  f.model.load.sequences = f.server.slots;
  f.model.load.logit_rows = f.server.slots;
  const families::DecodeModel model = load_decoder(f.model, d);
  generate::DecodeBackend* backend = model.backend.get();
  check_tokenizer_fits(tok, backend->vocab_size(), f.model, d);
  serve::ModelInfo info;
  // The model's positions, or the family's when its sequences have no end.
  info.context =
      backend->context_limit() > 0 ? backend->context_limit() : d.family->context_without_end;
  info.allow_special = d.family->prompt_allows_special;  // as tinylm generate encodes prompts
  if (d.family->documents_start_with_eot) info.start_id = eot_of(tok, f.model.model);
  if (f.ctx > 0) {
    if (backend->context_limit() > 0 && f.ctx > backend->context_limit()) {
      throw UsageError(
          cat("--ctx ", f.ctx, " is more than the model's context of ", backend->context_limit()));
    }
    info.context = f.ctx;
  }
  info.tokenizer = &tok;
  info.vocab_size = backend->vocab_size();
  info.eos_id = tok.eot_id().value_or(-1);
  const bool from_hub = f.model.model.rfind(kHubPrefix, 0) == 0;  // named by its repository
  info.id = !f.name.empty() ? f.name
            : from_hub      ? f.model.model.substr(std::string_view(kHubPrefix).size())
                            : std::filesystem::path(d.path).lexically_normal().filename().string();
  if (info.id.empty() || info.id == ".") info.id = "tinylm";
  info.aliases = f.aliases;

  serve::Server server(*backend, info, f.server);
  const int port = server.bind();
  if (!is_loopback(f.server.host) && f.server.api_key.empty()) {
    std::fprintf(stderr,
                 "tinylm serve: warning: listening on %s without --api-key: anyone who can reach "
                 "this address can use the model\n",
                 f.server.host.c_str());
  }
  std::thread signals_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "tinylm serve: %s: finishing the requests in progress\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    std::thread second([&] {  // a second signal: stop now
      int again = 0;
      sigwait(&signals, &again);
      std::_Exit(128 + again);
    });
    second.detach();
    server.shutdown();
  });
  std::fprintf(stderr, "tinylm serve: model '%s', %d slots, %d positions per request\n",
               info.id.c_str(), f.server.slots, info.context);
  std::fprintf(stderr, "tinylm serve: listening on http://%s:%d\n", f.server.host.c_str(), port);
  std::fflush(stderr);
  server.run();
  signals_thread.join();
  std::fprintf(stderr, "tinylm serve: stopped\n");
}

// "; EvermindLM 4096": the positions of the families whose sequences have no end, for --ctx.
std::string context_defaults() {
  std::string text;
  for (const families::Family* fam : families::those(families::decodes))
    if (fam->context_without_end > 0) text += cat("; ", fam->title, " ", fam->context_without_end);
  return text;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve",
                                     "Serve a GPT-2, EvermindLM or microgpt model over an "
                                     "OpenAI-compatible HTTP API, with a web page");
  add_arch_option(cmd, f->arch, families::those(families::decodes));
  f->model.add_to(cmd);
  cmd->add_option("--host", f->server.host, "Address to listen on (loopback by default)")
      ->capture_default_str();
  cmd->add_option("--port", f->server.port, "Port (0: any free port)")->capture_default_str();
  cmd->add_option("--api-key", f->server.api_key,
                  "Require 'Authorization: Bearer KEY' (default: $TINYLM_API_KEY, else none)");
  cmd->add_option("--slots", f->server.slots, "Generations at once (one batch)")
      ->capture_default_str();
  cmd->add_option("--queue", f->server.queue, "Generations waiting for a slot; past it: 429")
      ->capture_default_str();
  cmd->add_option("-c,--ctx,--ctx-size", f->ctx,
                  "Positions per request, prompt + completion (default: the model's" +
                      context_defaults() + ")")
      ->check(decimal_integer<int>())
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--timeout", f->server.timeout_s,
                  "Seconds a request may take, queue included; then it ends as at max_tokens")
      ->capture_default_str();
  cmd->add_option("--max-body", f->max_body_mb, "Largest request body, in MB (past it: 413)")
      ->capture_default_str();
  cmd->add_option("--stream-interval", f->stream_interval_ms,
                  "Streamed news at most this often, in ms (0: each token as it comes)")
      ->capture_default_str();
  cmd->add_option("--max-connections", f->server.max_connections,
                  "Connections open at once; past it idle ones, then the slowest requests, close")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-peer", f->server.max_connections_per_peer,
                  "Connections open at once from one client address")
      ->capture_default_str();
  cmd->add_option("--name", f->name, "The model's id in the API (default: the model's file name)");
  cmd->add_option("--alias", f->aliases,
                  "Another name listed for the model in GET /v1/models (repeatable); requests "
                  "naming any model are served by it")
      ->allow_extra_args(false);
  cmd->callback([f] { run_serve(*f); });
}

}  // namespace tinylm::cli
