// tinylm serve under load: aggregate decode tokens/s of 1, 8 and 32 concurrent streams through
// the HTTP server (continuous batching), against one stream, and one stream's decode rate and
// time to first token against generate::generate's (what `tinylm generate` runs) in the same
// process. Every request: a 16-token prompt, greedy (or sampled at --temperature from the whole
// vocabulary, as the server does by default at 1), max_tokens new tokens, end-of-text ignored.
// Medians over --reps rounds, each round every stream count in turn; "vs 1 stream" is the
// median of the rounds' ratios (the first --streams entry is the one stream). The generate
// baseline is measured before and after the server runs and its median taken over both.
//
// --stream-interval: the server's (default its default); the engine-alone client's bell too.
//
//   bench_serve --model DIR [--dtype bf16] [--activations f32] [--cache-type T] [--threads N]
//   [--tokens 64]
//               [--reps 3] [--streams 1,8,32] [--temperature 0] [--stream-interval MS]
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/generate.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/serve/engine.h"
#include "tinylm/serve/server.h"

using namespace tinylm;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct StreamTimes {
  Clock::time_point start, first, end;
  int chunks = 0;
  bool ok = false;
  std::string why;  // when not ok
};

// One streaming completion; the time its first text arrived and its end.
StreamTimes stream_one(int port, const std::string& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(600, 0);
  StreamTimes t;
  t.start = Clock::now();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    if (t.chunks++ == 0) t.first = Clock::now();
    (void)d;
    (void)n;
    return true;
  };
  const auto r = c.send(req);
  t.end = Clock::now();
  t.ok = r && r->status == 200;
  if (!t.ok)
    t.why = r ? "HTTP " + std::to_string(r->status) + " " + r->body : httplib::to_string(r.error());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, dtype = "bf16", activations = "f32", cache_type, streams_arg = "1,8,32",
                         device = "cpu";
  int threads = 0, tokens = 64, reps = 3;
  double temperature = 0;
  std::chrono::milliseconds interval = serve::ServerOptions{}.stream_interval;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model")
      model_dir = v;
    else if (a == "--dtype")
      dtype = v;
    else if (a == "--activations")
      activations = v;
    else if (a == "--cache-type")
      cache_type = v;
    else if (a == "--device")
      device = v;
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--tokens")
      tokens = std::stoi(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--streams")
      streams_arg = v;
    else if (a == "--temperature")
      temperature = std::stod(v);
    else if (a == "--stream-interval")
      interval = std::chrono::milliseconds(std::stoi(v));
    else {
      std::fprintf(stderr, "bench_serve: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (model_dir.empty()) {
    std::fprintf(stderr,
                 "usage: bench_serve --model DIR [--dtype bf16] [--activations f32] [--cache-type "
                 "f32|bf16|f16] "
                 "[--threads N] [--tokens 64] [--reps 3] [--streams 1,8,32] [--temperature 0] "
                 "[--stream-interval MS] [--device cpu|gpu|gpu:N]\n");
    return 2;
  }
  std::vector<int> streams;
  std::stringstream ss(streams_arg);
  for (std::string s; std::getline(ss, s, ',');) streams.push_back(std::stoi(s));
  set_num_threads(threads);
  std::printf("%s\n", bench::level_line().c_str());
  // On a GPU: the f32 weights uploaded in --dtype, a cache slot per stream reserved.
  const int gpu = kernels::vulkan::parse_device(device);
  gpt2::Model model = gpu < 0 ? checkpoints::load_gpt2_model(model_dir, "", parse_dtype(dtype))
                              : checkpoints::load_gpt2_model(model_dir, "", DType::f32)
                                    .to_gpu(kernels::vulkan::open_gpu(gpu), parse_dtype(dtype),
                                            *std::max_element(streams.begin(), streams.end()));
  model.set_activations(parse_dtype(activations));
  if (!cache_type.empty()) model.set_cache_type(parse_dtype(cache_type));
  const std::filesystem::path dir(model_dir);
  const BpeTokenizer tok =
      BpeTokenizer::from_directory(std::filesystem::exists(dir / "tokenizer.json")
                                       ? dir.string()
                                       : std::string(TINYLM_SOURCE_DIR "/data/gpt2"));
  std::vector<int> prompt = tok.encode(
      "The history of the city begins with a small settlement on the banks of the river, where");
  prompt.resize(16, prompt.back());
  std::printf(
      "GPT-2 %s, %s activations%s%s, %s KV cache, %d threads, 16-token prompt, %d new tokens, "
      "temperature %g, stream interval %d ms, %d reps%s%s\n",
      dtype.c_str(), activations.c_str(), activations == "bf16" ? " on " : "",
      activations == "bf16" ? kernels::bf16_unit_name(kernels::bf16_dot_unit()).data() : "",
      std::string(dtype_name(model.cache_type())).c_str(), num_threads(), tokens, temperature,
      static_cast<int>(interval.count()), reps, gpu < 0 ? "" : ", on GPU ",
      model.device_name().c_str());

  std::vector<double> decode_tps, prefill_ms;
  auto backend = generate::gpt2_backend(model);
  const auto baseline = [&] {
    for (int r = 0; r < reps; ++r) {
      generate::GenerateOptions o;
      o.max_tokens = tokens;
      o.sampling.temperature = temperature;
      const generate::GenerateResult g = generate::generate(*backend, prompt, o);
      decode_tps.push_back((tokens - 1) * 1000.0 / g.decode_ms);
      prefill_ms.push_back(g.prefill_ms);
    }
  };
  baseline();  // (the first run warms pages and threads: its figures are dropped)
  decode_tps.clear();
  prefill_ms.clear();
  baseline();

  // The model alone: B sequences stepped together by forward_batch (what a server step runs),
  // B tokens per step: the ceiling of the server's aggregate rate.
  std::vector<std::pair<int, double>> model_rates;
  for (const int n : streams) {
    std::vector<gpt2::KvCache> caches;
    std::vector<gpt2::KvCache*> ptrs;
    std::vector<float> logits(static_cast<size_t>(n) * model.config().vocab_size);
    for (int k = 0; k < n; ++k) caches.push_back(model.new_cache(16 + tokens));
    for (auto& c : caches) {
      model.forward(prompt, c, std::span(logits).first(model.config().vocab_size));
      ptrs.push_back(&c);
    }
    const std::vector<int> next(n, prompt[0]);
    std::vector<double> rate;
    for (int t = 0; t < tokens; ++t) {
      Timer timer;
      model.forward_batch(next, ptrs, logits);
      rate.push_back(n * 1000.0 / timer.elapsed_ms());
    }
    model_rates.emplace_back(n, median(rate));
  }

  serve::ModelInfo info;
  info.id = "bench";
  info.tokenizer = &tok;
  info.vocab_size = model.config().vocab_size;
  info.context = model.config().n_positions;
  info.eos_id = tok.eot_id().value_or(-1);
  // The engine alone (no HTTP): one choice, greedy, its decode rate from its first news on.
  std::vector<double> engine_tps;
  {  // (its loop on this thread, as the server's: see serve::Engine::run)
    serve::Metrics metrics(1);
    serve::Engine engine(*backend, tok, serve::EngineOptions{1, 1, -1, false}, metrics);
    serve::GenParams params;
    params.max_tokens = tokens;
    params.sampling.temperature = temperature;
    std::thread client([&] {
      for (int r = 0; r <= reps; ++r) {  // (the first warms up: dropped)
        const serve::Prompt p{prompt, "", tokens};
        auto job =
            std::make_shared<serve::Job>(p, params, serve::Clock::now() + std::chrono::hours(1),
                                         std::make_shared<serve::Bell>(interval));
        engine.submit(std::span(&job, 1));
        serve::Delta d;
        Clock::time_point first{};
        for (;;) {
          const uint64_t seen = job->bell().rings();
          const bool done = job->take(d);
          if (first == Clock::time_point{} && d.completion_tokens > 0) first = Clock::now();
          if (done) break;
          job->bell().wait(seen, std::chrono::milliseconds(20));
        }
        if (r > 0) engine_tps.push_back((tokens - 1) / seconds(first, Clock::now()));
      }
      engine.stop();
    });
    engine.run();
    client.join();
  }

  serve::ServerOptions o;
  o.port = 0;
  o.slots = *std::max_element(streams.begin(), streams.end());
  o.queue = 64;
  o.stream_interval = interval;
  serve::Server server(*backend, info, o);
  const int port = server.bind();
  // The server on this thread (it loaded the model: one OpenMP team), the clients on others.
  struct Row {
    int n;
    double aggregate, ratio, ratio_lo, ratio_hi, ttft_ms, stream_decode;
  };
  std::vector<Row> rows;
  std::thread driver([&] {
    const std::string body = nlohmann::json{
        {"prompt", prompt},
        {"max_tokens", tokens},
        {"temperature", temperature},
        {"ignore_eos", true},
        {"stream", true}}.dump();
    stream_one(port, body);  // warm-up: pages, threads, connections
    // Each round runs every stream count back to back, so a ratio compares rates measured
    // seconds apart (this host's speed drifts over minutes), and the ratios' median is taken.
    const size_t ns = streams.size();
    std::vector<std::vector<double>> agg(ns), ttft(ns), dec(ns);
    for (int r = 0; r < reps; ++r) {
      for (size_t i = 0; i < ns; ++i) {
        const int n = streams[i];
        std::vector<StreamTimes> times(n);
        std::vector<std::thread> clients;
        for (int k = 0; k < n; ++k)
          clients.emplace_back([&, k] { times[k] = stream_one(port, body); });
        for (auto& c : clients) c.join();
        Clock::time_point start = times[0].start, end = times[0].end;
        for (const StreamTimes& t : times) {
          if (!t.ok) {
            std::fprintf(stderr, "bench_serve: a request of %d streams failed after %.1f s: %s\n",
                         n, seconds(t.start, t.end), t.why.c_str());
            std::_Exit(1);
          }
          start = std::min(start, t.start);
          end = std::max(end, t.end);
        }
        agg[i].push_back(n * tokens / seconds(start, end));
        ttft[i].push_back(seconds(times[0].start, times[0].first) * 1000.0);
        dec[i].push_back((tokens - 1) / seconds(times[0].first, times[0].end));
      }
    }
    for (size_t i = 0; i < ns; ++i) {
      std::vector<double> ratio;
      for (int r = 0; r < reps; ++r) ratio.push_back(agg[i][r] / agg[0][r]);
      const auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
      rows.push_back(
          {streams[i], median(agg[i]), median(ratio), *lo, *hi, median(ttft[i]), median(dec[i])});
    }
    server.shutdown();
  });
  server.run();
  driver.join();
  baseline();

  const double gen_tps = median(decode_tps), gen_prefill = median(prefill_ms);
  std::printf("generate (same process): decode %.1f tok/s, prefill of 16 tokens %.1f ms\n", gen_tps,
              gen_prefill);
  std::printf("%8s %16s %12s %16s %14s %10s\n", "streams", "aggregate tok/s", "vs 1 stream",
              "(rounds' range)", "first token ms", "vs prefill");
  for (const auto& [n, rate] : model_rates) {
    std::printf(
        "model alone: %d sequences per forward_batch: %.1f tok/s (%.2fx one, %.1f%% of "
        "generate's decode per sequence)\n",
        n, rate, rate / model_rates.front().second, 100.0 * rate / n / gen_tps);
  }
  for (const Row& r : rows) {
    std::printf("%8d %16.1f %11.2fx %7.2f-%6.2fx %14.1f %9.2fx\n", r.n, r.aggregate, r.ratio,
                r.ratio_lo, r.ratio_hi, r.ttft_ms, r.ttft_ms / gen_prefill);
  }
  std::printf("one stream, the engine alone: decode %.1f tok/s = %.1f%% of generate's\n",
              median(engine_tps), 100.0 * median(engine_tps) / gen_tps);
  std::printf("one stream of %d through the server: decode %.1f tok/s = %.1f%% of generate's\n",
              rows.front().n, rows.front().stream_decode,
              100.0 * rows.front().stream_decode / gen_tps);
  return 0;
}
