// tinylm microgpt: Karpathy's microgpt.py, same output, thousands of times faster.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "int_flags.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/train/microgpt_run.h"

namespace tinylm::cli {

void register_microgpt(CLI::App& app) {
  auto opt = std::make_shared<train::MicrogptOptions>();
  auto engine = std::make_shared<std::string>("tensor");
  auto steps = std::make_shared<int>(1000);
  auto threads = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand(
      "microgpt",
      "Train Karpathy's microgpt (char-level GPT) on a list of names, then sample new ones; "
      "prints exactly what microgpt.py prints");
  cmd->add_option("--data", opt->data_path, "Text file, one document per line")
      ->capture_default_str();
  CLI::Option* steps_opt =
      cmd->add_option("--steps", *steps,
                      "Training steps, one document each (default 1000; 0 with --load)")
          ->check(above(0, true));
  cmd->add_option("--n-layer", opt->model.n_layer, "Transformer layers")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--n-embd", opt->model.n_embd, "Embedding width")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--n-head", opt->model.n_head, "Attention heads (must divide --n-embd)")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--block-size", opt->model.block_size, "Maximum sequence length")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--lr", opt->lr, "Initial Adam learning rate (decays linearly to 0)")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--temperature", opt->temperature, "Sampling temperature, > 0")
      ->check(above(0))
      ->capture_default_str();
  cmd->add_option("--samples", opt->samples, "Names to sample after training")
      ->check(above(0, true))
      ->capture_default_str();
  cmd->add_option("--seed", opt->seed,
                  "Seed of the Python-compatible RNG (shuffle, init, sampling)")
      ->capture_default_str();
  cmd->add_option("--engine", *engine, "tensor (fast kernels) or scalar (autograd, bit-exact)")
      ->check(CLI::IsMember({"tensor", "scalar"}))
      ->capture_default_str();
  cmd->add_option("--save", opt->save_path, "Write the trained model (safetensors)");
  cmd->add_option(
      "--load", opt->load_path,
      "Start from a saved model instead of the random init (then --steps defaults to 0): a "
      "safetensors file, or a run directory of train --arch microgpt (its newest checkpoint)");
  cmd->add_option("--threads", *threads,
                  "Threads (microgpt's shapes are too small to split: it runs on one)")
      ->check(CLI::Range(1, max_threads()));
  cmd->callback([=] {
    // The shape's own rule (heads divide the width) is a usage error too, found before the
    // transcript starts; a --load model brings its shape.
    if (opt->load_path.empty() && opt->model.n_embd % opt->model.n_head != 0) {
      throw UsageError(
          cat("--n-head ", opt->model.n_head, " does not divide --n-embd ", opt->model.n_embd));
    }
    set_num_threads(*threads);
    opt->engine = microgpt::parse_engine(*engine);
    opt->data_path = resolve_data_path(opt->data_path);  // data/names.txt from anywhere
    if (steps_opt->count() > 0) opt->steps = *steps;
    if (!opt->save_path.empty()) io::probe_output(opt->save_path);  // before the training
    std::ios::sync_with_stdio(false);
    const bool tty = ::isatty(::fileno(stdout)) != 0;
    const train::MicrogptResult r = train::run_microgpt(*opt, std::cout, tty);
    std::cout.flush();
    const double per_step_us =
        r.losses.empty() ? 0.0 : 1000.0 * r.timings.train_ms / r.losses.size();
    std::fprintf(
        stderr,
        "[%s engine] setup %.1f ms, train %.1f ms (%zu steps, %.1f us/step), sample %.1f ms\n",
        std::string(microgpt::engine_name(opt->engine)).c_str(), r.timings.setup_ms,
        r.timings.train_ms, r.losses.size(), per_step_us, r.timings.sample_ms);
  });
}

}  // namespace tinylm::cli
