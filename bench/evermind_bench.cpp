// EvermindLM speed: training tokens/s and greedy generation tokens/s, f32, for each thread
// count asked for. The side-by-side PyTorch script (bench/compare/evermind_torch.py) runs the
// same protocol on the same token sequences:
//
//  - model: the default config with vocab_size 4096 (d_model 64, 2 layers, conv
//    kernel 3, hidden 128, 4 experts, top-2), seed 0, aux loss coefficient 0.01;
//  - data: sequences of --seq-len tokens, token i of sequence s = splitmix64((s·seq_len + i)
//    + 1) mod vocab (see bench_token(); the script computes the same numbers);
//  - training: one optimizer step = one accumulation window of --accum sequences (their
//    gradients averaged, then AdamW lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on
//    every parameter, as torch.optim.AdamW) through the shared training loop
//    (train::EvermindTrainable + train::TrainLoop) with --threads threads. After --warmup steps,
//    each of --reps repetitions times --steps steps; tokens/s = steps · accum · seq_len / wall time
//    of the repetition, median (and best) of the repetitions;
//  - generation: generate::generate (incremental decoder), greedy, --new-tokens new tokens
//    after a --prompt-len token prompt (the start of sequence 0), on the initial weights;
//    tokens/s = new tokens / wall time of the whole call (prompt included), median of --reps
//    after one warm-up call.
//
// --dump PATH writes a safetensors file for the script's --check: the initial parameters
// ("param.<name>", names from evermind::param_layout), sequence 0 ("tokens"), our loss
// (metadata) and gradient ("grad.<name>") of that one sequence, the parameters after one
// training step on the first window ("step1.<name>"), the loss (metadata "loss_aux1") and
// gradient ("grad_aux1.<name>") of sequence 0 at those weights with aux_loss_coef 1, and our
// greedy continuation of the prompt ("greedy").
//   bench_evermind [--threads 1,2] [--seq-len 128] [--accum 8] [--steps 4] [--reps 7] [--warmup 2]
//                  [--vocab 4096] [--new-tokens 256] [--prompt-len 16] [--json] [--dump PATH]
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/generate.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/train/evermind_trainable.h"
#include "tinylm/train/loop.h"

using namespace tinylm;

namespace {

struct Args {
  std::vector<int> threads{1, 2};
  int64_t seq_len = 128, accum = 8, steps = 4, reps = 7, warmup = 2;
  int64_t vocab = 4096, new_tokens = 256, prompt_len = 16;
  bool json = false;
  std::string dump;
};

// The benchmark's token sequences, shared with the PyTorch script: splitmix64's output
// function on a counter.
int bench_token(int64_t seq, int64_t i, int64_t seq_len, int64_t vocab) {
  uint64_t z = static_cast<uint64_t>(seq * seq_len + i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<uint64_t>(vocab));
}

std::vector<std::vector<int>> make_sequences(int64_t count, int64_t seq_len, int64_t vocab) {
  std::vector<std::vector<int>> seqs(static_cast<size_t>(count));
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t i = 0; i < seq_len; ++i)
      seqs[static_cast<size_t>(s)].push_back(bench_token(s, i, seq_len, vocab));
  }
  return seqs;
}

evermind::Config bench_config(int64_t vocab) {
  evermind::Config c;
  c.vocab_size = vocab;  // the rest: the defaults
  return c;
}

// Windows of --accum sequences as the training loop's steps: step j takes sequences
// j·accum .. j·accum + accum − 1 of the pool, cyclically.
class PoolData final : public train::StepData {
 public:
  PoolData(const std::vector<std::vector<int>>& pool, int64_t accum) : pool_(pool), accum_(accum) {}
  train::Rows train_rows(int64_t step) override {
    const int64_t n = static_cast<int64_t>(pool_.size());
    const int64_t width = static_cast<int64_t>(pool_[0].size());
    buffer_.clear();
    for (int64_t j = 0; j < accum_; ++j) {
      const std::vector<int>& s = pool_[static_cast<size_t>((step * accum_ + j) % n)];
      buffer_.insert(buffer_.end(), s.begin(), s.end());
    }
    return {buffer_, accum_, width};
  }
  int64_t micro_rows() const override { return 1; }  // each sequence its own micro-batch
  int64_t eval_batches() const override { return 0; }
  train::Rows eval_rows(int64_t) override { return train_rows(0); }

 private:
  const std::vector<std::vector<int>>& pool_;
  int64_t accum_;
  std::vector<int32_t> buffer_;
};

train::EvermindTrainOptions trainable_options(int64_t accum, int threads) {
  train::EvermindTrainOptions o;
  o.aux_loss_coef = 0.01;
  o.threads = threads;
  o.max_rows = accum;
  return o;
}

// AdamW lr 1e-3 (constant), betas 0.9 / 0.999, eps 1e-8, weight decay 0.01 on every parameter
// (torch.optim.AdamW's), no clipping.
train::LoopOptions loop_options(int64_t steps) {
  train::LoopOptions o;
  o.steps = steps;
  o.lr = {1e-3, 0.0, 0, steps, optim::LrDecay::constant};
  o.optimizer = train::Optimizer::adamw;
  o.adam = {0.9, 0.999, 1e-8, 0.01};
  o.decay = train::DecayScope::all;
  return o;
}

// CPU seconds of the whole process (all threads): on a loaded machine wall time also counts
// the time other processes held the cores, CPU time does not.
double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Figures {
  double median = 0, best = 0;
};

Figures summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.back()};
}

struct Row {
  int threads = 1;
  Figures train_tok_s, gen_tok_s;
  double train_tok_cpu_s = 0, gen_tok_cpu_s = 0;  // tokens per CPU second, medians
  double step_ms = 0;                             // median ms per optimizer step
  double last_loss = 0;
};

Row run(const Args& a, int threads, const std::vector<std::vector<int>>& pool) {
  set_num_threads(threads);
  Row row;
  row.threads = threads;
  const evermind::Config cfg = bench_config(a.vocab);
  {
    evermind::Model<float> model(cfg, a.seq_len);
    train::EvermindTrainable trainable(model, trainable_options(a.accum, threads));
    PoolData data(pool, a.accum);
    train::TrainLoop<float> loop(trainable, data, loop_options(a.warmup + a.reps * a.steps));
    // The loop runs to its stop mark: the warm-up steps, then each repetition's.
    int64_t stop_at = 0;
    train::LoopHooks hooks;
    hooks.on_step = [&](const train::StepRecord& r) { row.last_loss = r.objective; };
    hooks.should_stop = [&] { return loop.state().step >= stop_at; };
    if (a.warmup > 0) {
      stop_at = a.warmup;
      loop.run(hooks);
    }
    std::vector<double> tok_s, ms, tok_cpu;
    const double tokens = static_cast<double>(a.steps * a.accum * a.seq_len);
    for (int64_t r = 0; r < a.reps; ++r) {
      stop_at += a.steps;
      const double cpu0 = process_cpu_s();
      Timer t;
      loop.run(hooks);
      const double el = t.elapsed_ms();
      tok_cpu.push_back(tokens / (process_cpu_s() - cpu0));
      tok_s.push_back(tokens / (el / 1e3));
      ms.push_back(el / static_cast<double>(a.steps));
    }
    row.train_tok_s = summarize(tok_s);
    row.train_tok_cpu_s = summarize(tok_cpu).median;
    std::sort(ms.begin(), ms.end());
    row.step_ms = ms[ms.size() / 2];
  }
  {
    const evermind::Model<float> model(cfg, a.seq_len);
    const std::vector<int> prompt(pool[0].begin(), pool[0].begin() + a.prompt_len);
    generate::GenerateOptions g;
    g.max_tokens = static_cast<int>(a.new_tokens);
    const auto backend = generate::evermind_backend(model);
    generate::generate(*backend, prompt, g);  // warm-up
    std::vector<double> tok_s, tok_cpu;
    for (int64_t r = 0; r < a.reps; ++r) {
      const double cpu0 = process_cpu_s();
      Timer t;
      const generate::GenerateResult res = generate::generate(*backend, prompt, g);
      const double el = t.elapsed_ms();
      tok_cpu.push_back(static_cast<double>(res.ids.size()) / (process_cpu_s() - cpu0));
      tok_s.push_back(static_cast<double>(res.ids.size()) / (el / 1e3));
    }
    row.gen_tok_s = summarize(tok_s);
    row.gen_tok_cpu_s = summarize(tok_cpu).median;
  }
  return row;
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

std::string num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}

// See the header comment. Runs on one thread (the numbers do not depend on it).
void dump(const Args& a, const std::vector<std::vector<int>>& pool) {
  set_num_threads(1);
  const evermind::Config cfg = bench_config(a.vocab);
  evermind::Model<float> model(cfg, a.seq_len);
  const ParamLayout& layout = model.layout();
  const std::vector<float> init(model.params().begin(), model.params().end());

  model.zero_grads();
  evermind::PassOptions pass;
  pass.aux_loss_coef = 0.01;
  const evermind::Loss loss = model.forward_backward(pool[0], pass);
  const std::vector<float> grad(model.grads().begin(), model.grads().end());
  model.zero_grads();

  const std::vector<int> prompt(pool[0].begin(), pool[0].begin() + a.prompt_len);
  generate::GenerateOptions g;
  g.max_tokens = 32;
  const std::vector<int> greedy =
      generate::generate(*generate::evermind_backend(model), prompt, g).ids;

  double step1_loss = 0.0;  // the first window's mean loss, aux term included
  {
    train::EvermindTrainable trainable(model, trainable_options(a.accum, 1));
    PoolData data(pool, a.accum);
    train::TrainLoop<float> loop(trainable, data, loop_options(1));
    train::LoopHooks hooks;
    hooks.on_step = [&](const train::StepRecord& r) { step1_loss = r.objective; };
    loop.run(hooks);
  }
  const std::vector<float> step1(model.params().begin(), model.params().end());

  // Once more at the stepped weights (conv taps no longer the identity) with the aux term
  // weighted 1, so the load-balancing gradient is not lost under the CE's.
  model.zero_grads();
  pass.aux_loss_coef = 1.0;
  const evermind::Loss loss_aux1 = model.forward_backward(pool[0], pass);
  const std::vector<float> grad_aux1(model.grads().begin(), model.grads().end());

  std::vector<io::SafetensorsWriteEntry> out;
  const auto add_params = [&](const std::string& prefix, const std::vector<float>& flat) {
    for (const ParamEntry& e : layout.entries()) {
      out.push_back({prefix + e.name, "F32", e.shape,
                     std::as_bytes(std::span<const float>(flat.data() + e.offset, e.numel))});
    }
  };
  add_params("param.", init);
  add_params("grad.", grad);
  add_params("step1.", step1);
  add_params("grad_aux1.", grad_aux1);
  out.push_back({"tokens", "I32", {a.seq_len}, bytes_of(pool[0])});
  out.push_back({"greedy", "I32", {static_cast<int64_t>(greedy.size())}, bytes_of(greedy)});
  std::map<std::string, std::string> meta{{"vocab_size", std::to_string(cfg.vocab_size)},
                                          {"d_model", std::to_string(cfg.d_model)},
                                          {"n_layers", std::to_string(cfg.n_layers)},
                                          {"conv_kernel", std::to_string(cfg.conv_kernel)},
                                          {"hidden_dim", std::to_string(cfg.hidden_dim)},
                                          {"n_experts", std::to_string(cfg.n_experts)},
                                          {"top_k", std::to_string(cfg.top_k)},
                                          {"aux_loss_coef", "0.01"},
                                          {"seq_len", std::to_string(a.seq_len)},
                                          {"accum", std::to_string(a.accum)},
                                          {"prompt_len", std::to_string(a.prompt_len)},
                                          {"lr", "0.001"},
                                          {"weight_decay", "0.01"},
                                          {"loss", num(loss.total)},
                                          {"ce", num(loss.ce)},
                                          {"aux", num(loss.aux)},
                                          {"step1_loss", num(step1_loss)},
                                          {"loss_aux1", num(loss_aux1.total)}};
  io::write_safetensors(a.dump, out, meta);
  std::fprintf(stderr, "wrote %s: loss %.9g (ce %.9g, aux %.9g), first window loss %.9g\n",
               a.dump.c_str(), loss.total, loss.ce, loss.aux, step1_loss);
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::atoi(item.c_str()));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const auto next = [&] { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (!std::strcmp(argv[i], "--json"))
      a.json = true;
    else if (!std::strcmp(argv[i], "--threads") && (v = next()))
      a.threads = parse_list(v);
    else if (!std::strcmp(argv[i], "--seq-len") && (v = next()))
      a.seq_len = std::atoll(v);
    else if (!std::strcmp(argv[i], "--accum") && (v = next()))
      a.accum = std::atoll(v);
    else if (!std::strcmp(argv[i], "--steps") && (v = next()))
      a.steps = std::atoll(v);
    else if (!std::strcmp(argv[i], "--reps") && (v = next()))
      a.reps = std::atoll(v);
    else if (!std::strcmp(argv[i], "--warmup") && (v = next()))
      a.warmup = std::atoll(v);
    else if (!std::strcmp(argv[i], "--vocab") && (v = next()))
      a.vocab = std::atoll(v);
    else if (!std::strcmp(argv[i], "--new-tokens") && (v = next()))
      a.new_tokens = std::atoll(v);
    else if (!std::strcmp(argv[i], "--prompt-len") && (v = next()))
      a.prompt_len = std::atoll(v);
    else if (!std::strcmp(argv[i], "--dump") && (v = next()))
      a.dump = v;
    else {
      std::fprintf(
          stderr,
          "usage: %s [--threads 1,2] [--seq-len N] [--accum N] [--steps N] [--reps N] [--warmup "
          "N]\n"
          "          [--vocab N] [--new-tokens N] [--prompt-len N] [--json] [--dump PATH]\n",
          argv[0]);
      return 2;
    }
  }
  try {
    check(a.seq_len >= 2 && a.accum >= 1 && a.steps >= 1 && a.reps >= 1 && a.warmup >= 0 &&
              a.vocab >= 1 && a.new_tokens >= 1 && a.prompt_len >= 1 && a.prompt_len <= a.seq_len &&
              !a.threads.empty(),
          "invalid option value");
    for (const int t : a.threads) check(t >= 1, "--threads entries must be >= 1");
    // Enough distinct sequences that a repetition does not revisit the same window.
    const int64_t pool_size = std::max<int64_t>(64, a.accum);
    const std::vector<std::vector<int>> pool = make_sequences(pool_size, a.seq_len, a.vocab);
    if (!a.dump.empty()) {
      dump(a, pool);
      return 0;
    }
    if (!a.json) {
      std::printf("%s\n", bench::level_line().c_str());
      std::printf(
          "EvermindLM f32, vocab %lld, d_model 64, 2 layers, K 3, hidden 128, 4 experts top-2, aux "
          "0.01\n"
          "training: seq_len %lld, %lld sequences per AdamW step (accumulated), %lld warm-up "
          "steps, "
          "%lld reps of %lld steps\n"
          "generation: greedy, %lld new tokens after a %lld-token prompt, 1 warm-up + %lld reps\n"
          "tok/s: median (best) over the repetitions; tok/cpu-s: tokens per CPU second of the "
          "process\n",
          static_cast<long long>(a.vocab), static_cast<long long>(a.seq_len),
          static_cast<long long>(a.accum), static_cast<long long>(a.warmup),
          static_cast<long long>(a.reps), static_cast<long long>(a.steps),
          static_cast<long long>(a.new_tokens), static_cast<long long>(a.prompt_len),
          static_cast<long long>(a.reps));
      std::printf("%7s %16s %10s %9s %10s %16s %10s\n", "threads", "train tok/s", "tok/cpu-s",
                  "ms/step", "loss", "generate tok/s", "tok/cpu-s");
    }
    std::string rows;
    for (const int t : a.threads) {
      const Row r = run(a, t, pool);
      if (a.json) {
        char b[512];
        std::snprintf(b, sizeof b,
                      "%s{\"threads\": %d, \"train_tok_s\": %.1f, \"train_tok_s_best\": %.1f, "
                      "\"train_tok_cpu_s\": %.1f, \"step_ms\": %.3f, \"gen_tok_s\": %.1f, "
                      "\"gen_tok_s_best\": %.1f, "
                      "\"gen_tok_cpu_s\": %.1f}",
                      rows.empty() ? "" : ", ", t, r.train_tok_s.median, r.train_tok_s.best,
                      r.train_tok_cpu_s, r.step_ms, r.gen_tok_s.median, r.gen_tok_s.best,
                      r.gen_tok_cpu_s);
        rows += b;
      } else {
        std::printf("%7d %8.0f (%5.0f) %10.0f %9.2f %10.4f %8.0f (%5.0f) %10.0f\n", t,
                    r.train_tok_s.median, r.train_tok_s.best, r.train_tok_cpu_s, r.step_ms,
                    r.last_loss, r.gen_tok_s.median, r.gen_tok_s.best, r.gen_tok_cpu_s);
        std::fflush(stdout);
      }
    }
    if (a.json) {
      std::printf(
          "{\"level\": \"%s\", \"vocab_size\": %lld, \"seq_len\": %lld, \"accum\": %lld, "
          "\"steps\": %lld, \"reps\": %lld, "
          "\"new_tokens\": %lld, \"prompt_len\": %lld, \"rows\": [%s]}\n",
          kernels::isa_name(kernels::active_isa()).data(), static_cast<long long>(a.vocab),
          static_cast<long long>(a.seq_len), static_cast<long long>(a.accum),
          static_cast<long long>(a.steps), static_cast<long long>(a.reps),
          static_cast<long long>(a.new_tokens), static_cast<long long>(a.prompt_len), rows.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_evermind: %s\n", e.what());
    return 1;
  }
  return 0;
}
