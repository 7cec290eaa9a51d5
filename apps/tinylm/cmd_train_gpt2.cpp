// tinylm train-gpt2: the fixed-batch GPT-2 reference protocol. The same 4 x 65 token grid
// (inputs 4 x 64, targets shifted by one) every step, plain SGD, the loss before each update,
// per-step weight fingerprints in a metrics JSON, so a run can be compared number for number with
// other implementations. A thin configuration of the shared training loop (train/loop.h): a
// StepData that returns the one batch every step, SGD at a constant rate, no clipping, loss scaling
// under f16.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "int_flags.h"
#include "model_kind.h"
#include "stop_signals.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/train/comm.h"
#include "tinylm/train/gpt2_metrics.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/replicas.h"

namespace tinylm::cli {

namespace {

constexpr int kBatch = 4, kSeq = 64;

struct Flags {
  std::string model, config, tokens, metrics_out, save_weights, compute = "f32";
  int steps = 20, threads = 0, devices = 1;
  std::string overlap = "auto";
  double lr = 1e-4, dropout = 0.0;
  uint64_t seed = 0;
};

// The protocol's one batch (kBatch rows of kSeq + 1 tokens), every step.
class FixedBatch final : public train::StepData {
 public:
  explicit FixedBatch(std::vector<int32_t> grid) : grid_(std::move(grid)) {}
  train::Rows train_rows(int64_t) override { return rows(); }
  int64_t micro_rows() const override { return kBatch; }
  int64_t eval_batches() const override { return 0; }
  train::Rows eval_rows(int64_t) override { return rows(); }
  train::Rows rows() const { return {grid_, kBatch, kSeq + 1}; }

 private:
  std::vector<int32_t> grid_;
};

// Every flag's value, before any file is read or written: a usage error (exit 2).
void check_flags(const Flags& f, int processes) {
  const auto need = [](bool ok, auto&&... what) {
    if (!ok) throw UsageError(cat(what...));
  };
  need(f.steps >= 0, "--steps must be non-negative (got ", f.steps, ")");
  need(std::isfinite(f.lr) && f.lr >= 0.0, "--lr must be finite and >= 0 (got ", f.lr, ")");
  need(f.dropout >= 0.0 && f.dropout < 1.0, "--dropout must be in [0, 1) (got ", f.dropout, ")");
  need(f.compute == "f32" || f.compute == "bf16" || f.compute == "f16",
       "--compute-dtype must be f32, bf16 or f16 (got ", f.compute, ")");
  const int shards = processes * f.devices;
  need(f.devices >= 1 && kBatch % shards == 0, "--devices ", f.devices, ": the batch of ", kBatch,
       " rows must split into equal shards (processes x devices = ", shards, "; 1, 2 or 4 shards)");
}

void run(const Flags& f) {
  const StopSignals stop;  // (before any thread starts)
  const train::Comm& comm = train::Comm::world();
  check_flags(f, comm.size());
  const int shards = comm.size() * f.devices;
  // What --model is, from the file: a wrong kind is one line before anything loads.
  const std::string model_path =
      resolve_model("train-gpt2", f.model, "", {&families::gpt2_family}).path;
  const DType compute = parse_dtype(f.compute);
  // Under mpirun every process trains its shards; the first one prints and writes.
  const bool root = comm.root();
  set_num_threads(f.threads);
  // Outputs are checked before any training: an unwritable path fails now, not after it.
  if (root && !f.metrics_out.empty()) io::probe_output(f.metrics_out);
  if (root && !f.save_weights.empty()) {
    std::error_code ec;
    const auto weights = std::filesystem::file_size(model_path, ec);  // a directory: unknown
    io::probe_output(f.save_weights, ec ? 0 : weights);
  }

  checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(model_path, f.config);
  check(ck.lm_head.empty(), model_path,
        ": lm_head.weight differs from wte; train-gpt2 trains the tied head only");
  FixedBatch data(train::load_token_grid(f.tokens, kBatch, kSeq + 1, ck.config.vocab_size));
  std::string source = model_path;  // the file whose layout --save-weights copies
  if (std::filesystem::is_directory(source))
    source = (std::filesystem::path(source) / "model.safetensors").string();

  const gpt2::Config config = ck.config;
  // One replica per device, each on its shard of the batch (train/replicas.h).
  train::Replicas<float> model(
      train::gpt2_replicas(config, std::move(ck.params),
                           {kBatch / shards, kSeq, static_cast<float>(f.dropout), compute},
                           f.devices),
      comm.overlap_exchange(train::parse_overlap(f.overlap), num_threads()));
  const bool f16 = compute == DType::f16;
  train::LoopOptions options;
  options.steps = f.steps;
  options.lr = {f.lr, 0.0, 0, f.steps, optim::LrDecay::constant};
  options.optimizer = train::Optimizer::sgd;
  options.clip = 0.0;
  options.loss_scaling = f16;  // f16: skipped steps halve the scale, as long as they come
  options.max_bad_steps = std::numeric_limits<int64_t>::max();  // f32, bf16: stopped below
  options.seed = f.seed;  // dropout masks keyed by (seed, step), the step 1-based
  train::TrainLoop<float> loop(model, data, options);

  train::RunMetrics metrics;
  metrics.steps = f.steps;
  metrics.devices = shards;
  metrics.batch_size = kBatch;
  metrics.seq_len = kSeq;
  metrics.lr = f.lr;
  metrics.n_params = static_cast<int64_t>(model.layout().entries().size());
  // The model's loss on the batch before any update, measured without dropout.
  metrics.initial_loss = static_cast<float>(model.evaluate(data.rows(), kBatch).loss);
  check(std::isfinite(metrics.initial_loss) || f16, model_path, ": the initial loss is ",
        train::py_repr(metrics.initial_loss));
  if (root)
    std::printf("initial loss (before step 1): %s\n", train::py_repr(metrics.initial_loss).c_str());
  std::fflush(stdout);

  std::vector<double> step_ms;
  TerminalProgress progress("train-gpt2", "steps");
  train::LoopHooks hooks;
  hooks.on_step = [&](const train::StepRecord& r) {
    // f32 and bf16 have no loss scale to lower: a non-finite step ends the run (the loop
    // skipped it, so the parameters are those before it).
    check(!r.skipped || f16, "the loss (", r.loss, ") or a gradient is not finite at step ", r.step,
          " (training diverged; parameters left as they were before this step)");
    const float loss = static_cast<float>(r.loss);
    const double ms = r.step_s * 1e3;
    step_ms.push_back(ms);
    if (!root) return;
    // stdout: the same bytes for the same run; the step times go to stderr and the metrics.
    progress.finish();  // a terminal's progress line gives way to the step line
    std::printf("step %3d  loss %s", static_cast<int>(r.step), train::py_repr(loss).c_str());
    if (f16) {
      std::printf("  scale %g%s", r.loss_scale,
                  r.skipped ? "  (skipped: gradients overflowed)" : "");
    }
    std::printf("\n");
    std::fflush(stdout);
    progress.update(r.step, f.steps);
    if (!f.metrics_out.empty()) {
      metrics.records.push_back(
          {r.step, loss, ms, train::fingerprint_weights(config, model.params())});
    }
  };
  hooks.should_stop = [&stop] { return stop.requested(); };
  loop.run(hooks);
  progress.finish();
  const int64_t done = loop.state().step;
  if (done < f.steps) {  // interrupted: keep what was trained, say where
    if (root && !f.save_weights.empty()) {
      checkpoints::save_gpt2_weights_like(source, f.save_weights, config, model.params());
    }
    if (root) {
      std::fprintf(stderr, "tinylm: interrupted after step %lld of %d: %s\n",
                   static_cast<long long>(done), f.steps,
                   f.save_weights.empty()
                       ? "nothing saved (no --save-weights)"
                       : ("weights at that step written to " + f.save_weights).c_str());
    }
    throw ExitRequest{stop.exit_code()};
  }
  if (root && !step_ms.empty()) {
    std::vector<double> sorted = step_ms;
    std::sort(sorted.begin(), sorted.end());
    double total = 0;
    for (const double ms : step_ms) total += ms;
    std::fprintf(stderr, "%zu steps in %.2f s: median %.2f ms/step (min %.2f, max %.2f)\n",
                 step_ms.size(), total / 1e3, sorted[sorted.size() / 2], sorted.front(),
                 sorted.back());
  }

  if (!root) return;
  if (!f.metrics_out.empty()) {
    io::AtomicFile out(f.metrics_out);
    const std::string json = train::metrics_json(metrics);
    out.write(std::as_bytes(std::span(json.data(), json.size())));
    out.commit();
  }
  if (!f.save_weights.empty()) {
    checkpoints::save_gpt2_weights_like(source, f.save_weights, config, model.params());
    std::fprintf(stderr, "weights written to %s\n", f.save_weights.c_str());
  }
}

}  // namespace

void register_train_gpt2(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "train-gpt2",
      "The fixed-batch GPT-2 training protocol (SGD on one 4 x 65 token grid: inputs are columns "
      "0..63, targets 1..64; make it with tinylm tokenize --grid 4x65)");
  cmd->add_option("--model", f->model,
                  "GPT-2 weights: a model.safetensors file or a model directory")
      ->required();
  cmd->add_option("--config", f->config, "config.json (default: next to the weights)");
  cmd->add_option("--tokens", f->tokens,
                  "The 4 x 65 grid, JSON {\"ids\": [[65 ids] x 4]} (tinylm tokenize --grid 4x65)")
      ->required();
  cmd->add_option("--steps", f->steps, "Optimizer steps (default 20)")
      ->check(decimal_integer<int>());
  cmd->add_option("--lr", f->lr, "SGD learning rate (default 1e-4)");
  cmd->add_option("--metrics-out", f->metrics_out, "Write the run's metrics JSON here");
  cmd->add_option("--save-weights", f->save_weights,
                  "Write the trained weights here (the input file's layout)");
  cmd->add_option("--dropout", f->dropout, "Dropout rate in [0, 1) (default 0)");
  cmd->add_option("--seed", f->seed, "Seed of the dropout masks (default 0)")
      ->check(decimal_integer<uint64_t>());
  cmd->add_option("--devices", f->devices,
                  "Data-parallel replicas, each on its shard of the batch (1, 2 or 4; default 1)")
      ->check(decimal_integer<int>());
  cmd->add_option("--compute-dtype", f->compute,
                  "f32 | bf16 | f16 (f16 adds dynamic loss scaling)");
  cmd->add_option("--threads", f->threads, "Threads (default: all cores)")
      ->check(decimal_integer<int>())
      ->check(CLI::Range(1, max_threads()));
  cmd->add_option("--overlap", f->overlap,
                  "Under mpirun, exchange gradients during the backward: auto (when a core is "
                  "free for it), on or off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->footer(kGpt2TrainingLevelsNote);
  cmd->callback([f] { run(*f); });
}

}  // namespace tinylm::cli
