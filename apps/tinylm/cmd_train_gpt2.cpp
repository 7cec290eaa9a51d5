// tinylm train-gpt2: the fixed-batch GPT-2 reference protocol (train/gpt2_protocol.h): SGD on one
// 4 x 65 token grid, the loss before each update on stdout, per-step weight fingerprints in a
// metrics JSON. This file turns flags into the protocol's options and writes its outputs.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli_util.h"
#include "commands.h"
#include "int_flags.h"
#include "model_kind.h"
#include "stop_signals.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/train/gpt2_metrics.h"
#include "tinylm/train/gpt2_protocol.h"
#include "tinylm/train/run_config.h"

namespace tinylm::cli {

namespace {

using train::Gpt2Protocol;

struct Flags {
  std::string model, config, tokens, metrics_out, save_weights, compute = "f32";
  int steps = 20, threads = 0, devices = 1;
  std::string overlap = "auto", device = "cpu";
  double lr = 1e-4, dropout = 0.0;
  uint64_t seed = 0;
};

// The protocol's options from the flags, checked before any file is read or written: a wrong
// value is a usage error (exit 2).
train::Gpt2ProtocolOptions protocol_options(const Flags& f, bool root) {
  train::Gpt2ProtocolOptions o;
  o.steps = f.steps;
  o.lr = f.lr;
  o.dropout = f.dropout;
  o.compute = f.compute;
  o.seed = f.seed;
  o.devices = f.devices;
  o.overlap = f.overlap;
  o.device = f.device;
  o.record_weights = root && !f.metrics_out.empty();
  try {
    Gpt2Protocol::check(o, distributed::Comm::world().size());
  } catch (const train::FlagError& e) {
    throw UsageError(e.what());
  }
  return o;
}

// The outputs, checked before any training: an unwritable path fails now, not after it.
void probe_outputs(const Flags& f, const std::string& model_path) {
  if (!f.metrics_out.empty()) io::probe_output(f.metrics_out);
  if (!f.save_weights.empty()) {
    std::error_code ec;
    const auto weights = std::filesystem::file_size(model_path, ec);  // a directory: unknown
    io::probe_output(f.save_weights, ec ? 0 : weights);
  }
}

// --save-weights in the layout of the file the weights came from.
void save_weights(const Flags& f, const std::string& model_path, const Gpt2Protocol& protocol) {
  std::string source = model_path;
  if (std::filesystem::is_directory(source))
    source = (std::filesystem::path(source) / "model.safetensors").string();
  checkpoints::save_gpt2_weights_like(source, f.save_weights, protocol.config(), protocol.params());
}

// An interrupted run's weights, when --save-weights asks for them, and where they went.
void save_interrupted(const Flags& f, const std::string& model_path, const Gpt2Protocol& protocol,
                      int64_t done) {
  if (!f.save_weights.empty()) save_weights(f, model_path, protocol);
  std::fprintf(stderr, "tinylm: interrupted after step %lld of %d: %s\n",
               static_cast<long long>(done), f.steps,
               f.save_weights.empty()
                   ? "nothing saved (no --save-weights)"
                   : ("weights at that step written to " + f.save_weights).c_str());
}

// A finished run's step times (stderr), metrics JSON and weights.
void write_outputs(const Flags& f, const std::string& model_path, const Gpt2Protocol& protocol) {
  std::fputs(protocol.timing_summary().c_str(), stderr);
  if (!f.metrics_out.empty()) {
    const std::string json = train::metrics_json(protocol.metrics());
    io::write_file_atomic(f.metrics_out, std::as_bytes(std::span(json.data(), json.size())));
  }
  if (!f.save_weights.empty()) {
    save_weights(f, model_path, protocol);
    std::fprintf(stderr, "weights written to %s\n", f.save_weights.c_str());
  }
}

void run(const Flags& f) {
  const StopSignals stop;  // (before any thread starts)
  // Under mpirun every process trains its shards; the first one prints and writes.
  const bool root = distributed::Comm::world().root();
  const train::Gpt2ProtocolOptions options = protocol_options(f, root);
  // What --model is, from the file: a wrong kind is one line before anything loads.
  const std::string model_path =
      resolve_model("train-gpt2", f.model, "", {&families::gpt2_family}).path;
  set_num_threads(f.threads);
  if (root) probe_outputs(f, model_path);
  checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(model_path, f.config);
  check(ck.lm_head.empty(), model_path,
        ": lm_head.weight differs from wte; train-gpt2 trains the tied head only");
  const int64_t vocab = ck.config.vocab_size;
  Gpt2Protocol protocol(
      ck.config, std::move(ck.params),
      train::load_token_grid(f.tokens, Gpt2Protocol::kBatch, Gpt2Protocol::kSeq + 1, vocab),
      options);
  const float initial = protocol.initial_loss();
  check(std::isfinite(initial) || protocol.loss_scaled(), model_path, ": the initial loss is ",
        train::py_repr(initial));
  if (root) std::printf("initial loss (before step 1): %s\n", train::py_repr(initial).c_str());
  std::fflush(stdout);
  TerminalProgress progress("train-gpt2", "steps");
  const int64_t done = protocol.run(
      [&](const train::StepRecord& r) {
        if (!root) return;
        // stdout: the same bytes for the same run; the step times go to stderr and the metrics.
        progress.finish();  // a terminal's progress line gives way to the step line
        std::printf("%s\n", train::protocol_step_line(r, protocol.loss_scaled()).c_str());
        std::fflush(stdout);
        progress.update(r.step, f.steps);
      },
      [&stop] { return stop.requested(); });
  progress.finish();
  if (done < f.steps) {  // interrupted: keep what was trained, say where
    if (root) save_interrupted(f, model_path, protocol, done);
    throw ExitRequest{stop.exit_code()};
  }
  if (root) write_outputs(f, model_path, protocol);
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
  cmd->add_option("--device", f->device,
                  "cpu, gpu or gpu:N: where the forward and backward run (a Vulkan GPU; tinylm "
                  "devices lists them; default cpu)");
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
