// tinylm train-gpt2: the fixed-batch GPT-2 reference protocol. The same 4 x 64 batch every
// step, plain SGD, the loss before each update, per-step weight fingerprints in a metrics
// JSON, so a run can be compared number for number with other implementations.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/train/gpt2_checkpoint.h"
#include "tinylm/train/gpt2_metrics.h"
#include "tinylm/train/gpt2_train.h"

namespace tinylm::cli {

namespace {

constexpr int kBatch = 4, kSeq = 64;

struct Flags {
  std::string model, config, tokens, metrics_out, save_weights, compute = "f32";
  int steps = 20, threads = 0;
  double lr = 1e-4, dropout = 0.0;
  uint64_t seed = 0;
};

void run(const Flags& f) {
  check(f.steps >= 0, "--steps must be non-negative (got ", f.steps, ")");
  check(f.dropout >= 0.0 && f.dropout < 1.0, "--dropout must be in [0, 1) (got ", f.dropout, ")");
  const DType compute = parse_dtype(f.compute);
  check(compute == DType::f32 || compute == DType::bf16 || compute == DType::f16,
        "--compute-dtype must be f32, bf16 or f16 (got ", f.compute, ")");
  set_num_threads(f.threads);

  train::Gpt2Checkpoint ck = train::load_gpt2(f.model, f.config);
  check(ck.lm_head.empty(), f.model,
        ": lm_head.weight differs from wte; train-gpt2 trains the tied head only");
  const std::vector<int32_t> grid =
      train::load_token_grid(f.tokens, kBatch, kSeq + 1, ck.config.vocab_size);
  std::vector<int32_t> inputs, targets;
  for (int b = 0; b < kBatch; ++b) {
    const auto row = grid.begin() + b * (kSeq + 1);
    inputs.insert(inputs.end(), row, row + kSeq);
    targets.insert(targets.end(), row + 1, row + kSeq + 1);
  }
  std::string source = f.model;  // the file whose layout --save-weights copies
  if (std::filesystem::is_directory(source))
    source = (std::filesystem::path(source) / "model.safetensors").string();

  gpt2::Trainer trainer(ck.config, {kBatch, kSeq, static_cast<float>(f.dropout), compute});
  train::Gpt2TrainConfig tc;
  tc.lr = f.lr;
  tc.seed = f.seed;
  train::Gpt2TrainState state(trainer, tc);

  train::RunMetrics metrics;
  metrics.steps = f.steps;
  metrics.batch_size = kBatch;
  metrics.seq_len = kSeq;
  metrics.lr = f.lr;
  metrics.n_params = static_cast<int64_t>(trainer.layout().entries().size());
  // The model's loss on the batch before any update, measured without dropout.
  trainer.set_dropout(0.0f);
  metrics.initial_loss = trainer.forward(ck.params, inputs, targets);
  trainer.set_dropout(static_cast<float>(f.dropout));
  check(std::isfinite(metrics.initial_loss) || compute == DType::f16, f.model,
        ": the initial loss is ", train::py_repr(metrics.initial_loss));
  std::printf("initial loss (before step 1): %s\n", train::py_repr(metrics.initial_loss).c_str());
  std::fflush(stdout);

  for (int i = 1; i <= f.steps; ++i) {
    Timer timer;
    const train::Gpt2StepResult r = train::train_step(trainer, ck.params, state, inputs, targets);
    const double ms = timer.elapsed_ms();
    std::printf("step %3d  loss %s  %9.2f ms", i, train::py_repr(r.loss).c_str(), ms);
    if (compute == DType::f16)
      std::printf("  scale %g%s", r.scale, r.applied ? "" : "  (skipped: gradients overflowed)");
    std::printf("\n");
    std::fflush(stdout);
    if (!f.metrics_out.empty()) {
      metrics.records.push_back({i, r.loss, ms, train::fingerprint_weights(ck.config, ck.params)});
    }
  }
  if (!f.metrics_out.empty()) {
    io::AtomicFile out(f.metrics_out);
    const std::string json = train::metrics_json(metrics);
    out.write(std::as_bytes(std::span(json.data(), json.size())));
    out.commit();
  }
  if (!f.save_weights.empty()) {
    train::save_gpt2_weights_like(source, f.save_weights, ck.config, ck.params);
    std::fprintf(stderr, "weights written to %s\n", f.save_weights.c_str());
  }
}

}  // namespace

void register_train_gpt2(CLI::App& app) {
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "train-gpt2", "The fixed-batch GPT-2 training protocol (SGD on one 4 x 64 batch)");
  cmd->add_option("--model", f->model,
                  "GPT-2 weights: a model.safetensors file or a model directory")
      ->required();
  cmd->add_option("--config", f->config, "config.json (default: next to the weights)");
  cmd->add_option("--tokens", f->tokens, "JSON file {\"ids\": [[...] x 65] x 4}")->required();
  cmd->add_option("--steps", f->steps, "Optimizer steps (default 20)");
  cmd->add_option("--lr", f->lr, "SGD learning rate (default 1e-4)");
  cmd->add_option("--metrics-out", f->metrics_out, "Write the run's metrics JSON here");
  cmd->add_option("--save-weights", f->save_weights,
                  "Write the trained weights here (the input file's layout)");
  cmd->add_option("--dropout", f->dropout, "Dropout rate in [0, 1) (default 0)");
  cmd->add_option("--seed", f->seed, "Seed of the dropout masks (default 0)");
  cmd->add_option("--compute-dtype", f->compute,
                  "f32 | bf16 | f16 (f16 adds dynamic loss scaling)");
  cmd->add_option("--threads", f->threads, "Threads (default: all cores)");
  cmd->callback([f] { run(*f); });
}

}  // namespace tinylm::cli
