// tinylm train: train GPT-2, EvermindLM or microgpt on your own text in a run directory, or
// continue one (--resume). Every setting is a RunConfig field (train/run_config.h); this file
// only turns flags (and a --config file's settings, train/config_file.h) into them and says
// what each one does.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <type_traits>

#include "cli_util.h"
#include "commands.h"
#include "int_flags.h"
#include "model_kind.h"
#include "stop_signals.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/families/family.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/train/config_file.h"
#include "tinylm/train/family.h"
#include "tinylm/train/run.h"
#include "tinylm/train/run_config.h"

namespace tinylm::cli {

namespace {

const std::map<std::string, std::string> kHelp = {
    {"arch", "What to train: gpt2, evermind or microgpt"},
    {"data", "Training text: UTF-8 files, or directories of them"},
    {"init-from",
     "Start from these weights: a GPT-2 (Hugging Face) directory, an EVL0 checkpoint, a "
     "microgpt safetensors, a run directory (its kind sets --arch), or hf:ORG/NAME[@REV] from "
     "the Hugging Face Hub"},
    {"tokenizer",
     "char (the data's characters), byte (the 256 bytes), bpe:N (a BPE of N tokens trained on "
     "--data), or a tokenizer.json or vocabulary directory. Default: gpt2, the --init-from "
     "model's, else the bundled GPT-2 one; evermind, the one saved with --init-from's model, "
     "else bpe:--vocab-size"},
    {"preset",
     "gpt2 fresh model's shape: 124M, baby (nanoGPT's), mini or small-test; --n-layer, "
     "--n-head, --n-embd and --block-size override its fields"},
    {"n-layer", "Layers (gpt2, evermind, microgpt)"},
    {"n-head", "gpt2/microgpt attention heads"},
    {"n-embd", "gpt2/microgpt width"},
    {"block-size",
     "gpt2: positions (also the default --seq-len); microgpt: maximum document length"},
    {"bias",
     "gpt2: true (GPT-2's biases) or false (nanoGPT's bias=False: held at zero, saved as "
     "zeros)"},
    {"d-model", "evermind width"},
    {"conv-kernel", "evermind causal conv taps"},
    {"hidden-dim", "evermind expert width (0: 2 x d-model)"},
    {"experts", "evermind routed experts"},
    {"top-k", "evermind experts per token"},
    {"vocab-size", "evermind: tokens of the BPE trained on --data"},
    {"val-fraction", "Hold out this fraction of the data's end for validation"},
    {"batch", "Rows (windows of --seq-len + 1 tokens) per micro-batch"},
    {"seq-len", "Tokens per row (gpt2, evermind; a microgpt step is one document)"},
    {"accum", "Micro-batches whose gradients are averaged per optimizer step"},
    {"devices",
     "Data-parallel replicas: each micro-batch is split into this many shards, their gradients "
     "averaged in shard order"},
    {"device",
     "gpt2: cpu, gpu or gpu:N, where the forward and backward run (a Vulkan GPU; tinylm devices "
     "lists them)"},
    {"order", "random: windows from a counter RNG keyed by (seed, step, row); sequential"},
    {"seed", "Initialization, data order and dropout seed"},
    {"optimizer", "adamw or sgd"},
    {"lr", "Peak learning rate"},
    {"min-lr", "Learning rate at the last step"},
    {"warmup", "Steps of linear warmup"},
    {"schedule", "Decay after warmup: cosine, linear or constant"},
    {"beta1", "AdamW beta1"},
    {"beta2", "AdamW beta2"},
    {"eps", "AdamW epsilon"},
    {"weight-decay", "AdamW decoupled weight decay"},
    {"decay",
     "Parameters weight decay applies to: matrices (the linear maps), embeddings (the "
     "matrices and the embeddings) or all"},
    {"clip", "Clip the global gradient norm to this (0: off)"},
    {"compute-dtype", "gpt2 matrix products: f32, bf16 or f16 (f16 with loss scaling)"},
    {"dropout", "gpt2 dropout rate"},
    {"aux-loss-coef", "evermind load-balancing loss weight"},
    {"mixed-precision", "evermind: fp16 gradients with dynamic loss scaling"},
    {"checkpoint-activations", "evermind: recompute each layer in backward"},
    {"steps", "Optimizer steps in all (may change on --resume)"},
    {"eval-every", "Evaluate every N steps (0: at the end only)"},
    {"eval-batches", "Validation batches per evaluation (the same ones each time)"},
    {"save-every", "Checkpoint every N steps (0: at the end only)"},
    {"keep", "Checkpoints to keep"},
    {"max-bad-steps", "Stop after this many non-finite steps in a row"},
    {"log-every", "Progress line every N steps when not on a terminal"},
    {"sample-every",
     "gpt2: print a short sample every N steps and at the end (as nanoGPT's sample.py: from a "
     "newline, temperature 0.8, top-k 200; 0: never)"},
    {"threads", "Threads (default: all cores)"},
    {"overlap",
     "Under mpirun, exchange gradients during the backward: auto (when a core is free for it), "
     "on or off"},
};

struct TrainFlags {
  train::RunConfig config;
  std::map<std::string, CLI::Option*> options;
  std::string out, resume, config_file;
  double peak_gflops = 0.0;
  std::set<std::string> from_file;  // the settings --config's file gave
};

// The settings given: the --config file's and the flags on the command line, as RunConfig JSON.
// Both count as given alike: a new run takes them over the architecture's defaults, and
// --resume refuses a fixed one that differs from the run's.
nlohmann::ordered_json given_flags(TrainFlags& f) {
  nlohmann::ordered_json given = nlohmann::ordered_json::object();
  const nlohmann::ordered_json all = train::to_json(f.config);
  for (const auto& [name, opt] : f.options) {
    if (opt->count() > 0 || f.from_file.contains(name)) given[name] = all[name];
  }
  return given;
}

// --config FILE: its settings under the flags given on the command line, which win. Its names
// and types are checked by the same merge as run.json's, with errors naming the file.
void apply_config_file(TrainFlags& f) {
  if (f.config_file.empty()) return;
  const nlohmann::ordered_json flags = given_flags(f);  // the command line's alone, so far
  const nlohmann::ordered_json file = train::read_config_file(resolve_data_path(f.config_file));
  train::merge_json(f.config, file, f.config_file);
  train::merge_json(f.config, flags, "the command line");
  for (const auto& item : file.items()) f.from_file.insert(item.key());
}

// A new run's flags, completed: --init-from's family as --arch, the data paths resolved and the
// family's default tokenizer (EvermindLM's saved with the starting model, GPT-2's vocabulary
// from the starting weights or the bundled one).
nlohmann::ordered_json new_run_flags(TrainFlags& f) {
  nlohmann::ordered_json given = given_flags(f);
  // --init-from says what it is: --arch may be left out, and must agree when given.
  if (!f.config.init_from.empty()) {
    const DetectedModel d =
        resolve_model("train --init-from", f.config.init_from,
                      given.contains("arch") ? f.config.arch : "", families::all());
    f.config.arch = d.family->name;
    f.config.init_from = d.path;
    given["arch"] = f.config.arch;
    given["init-from"] = d.path;
  }
  if (!given.contains("arch"))
    throw UsageError("--arch is required for a new run (or --init-from a model)");
  if (!given.contains("data")) throw UsageError("--data is required for a new run");
  // data/X of the README's examples, from any directory.
  for (auto& path : given["data"]) path = resolve_data_path(path.get<std::string>());
  if (!given.contains("tokenizer")) {
    const std::string tokenizer =
        families::trainable().find(f.config.arch).default_tokenizer(f.config, stderr);
    if (!tokenizer.empty()) given["tokenizer"] = tokenizer;
  }
  return given;
}

void run(TrainFlags& f) {
  const StopSignals stop;  // (before any thread starts)
  if (f.out.empty() == f.resume.empty())
    throw UsageError("give --out DIR (a new run) or --resume DIR");
  apply_config_file(f);
  train::RunRequest request;
  request.dir = f.resume.empty() ? f.out : f.resume;
  request.resume = !f.resume.empty();
  request.terminal = isatty(STDERR_FILENO) != 0;
  request.peak_flops = f.peak_gflops * 1e9;
  request.should_stop = [&stop] { return stop.requested(); };
  train::RunSummary s;
  try {
    request.given = request.resume ? given_flags(f) : new_run_flags(f);
    s = train::run_training(families::trainable(), request);
  } catch (const train::FlagError& e) {  // found before the run directory is written
    throw UsageError(e.what());
  }
  if (s.stopped) {
    // Interrupted: the loop saved a checkpoint (atomically) before returning.
    if (distributed::Comm::world().root()) {
      std::fprintf(stderr,
                   "tinylm: interrupted at step %lld: checkpoint %s saved; continue with: "
                   "tinylm train --resume %s\n",
                   static_cast<long long>(s.steps),
                   s.checkpoint.empty() ? "(none)" : s.checkpoint.c_str(), request.dir.c_str());
    }
    throw ExitRequest{stop.exit_code()};
  }
  if (!distributed::Comm::world().root()) return;  // under mpirun the first process reports
  std::printf("trained %lld steps; last loss %.4f", static_cast<long long>(s.steps), s.last_loss);
  if (s.best_val_loss) std::printf(", best validation loss %.4f", *s.best_val_loss);
  std::printf("\nmodel: %s\n", s.checkpoint.c_str());
}

// `line` ("Label: --a 1 --b 2 ...") cut before a flag where it would pass 100 columns, the
// lines after the first indented by four spaces.
std::string wrapped(const std::string& line) {
  std::string out;
  size_t start = 0;  // of the current output line, in out
  for (size_t at = 0; at < line.size();) {
    size_t next = line.find(" --", at + 1);
    if (next == std::string::npos) next = line.size();
    if (out.size() - start + (next - at) > 100 && out.size() > start + 4) {
      out += "\n   ";
      start = out.size() - 3;
    }
    out += line.substr(at, next - at);
    at = next;
  }
  return out;
}

// The settings' defaults: a column per architecture for those that differ between the
// families or that some family refuses ("-"), then those that one family alone takes, then
// the rest.
std::string defaults_table() {
  const train::TrainFamilies& trainable = families::trainable();
  const std::span<const train::TrainFamilies::Entry> families = trainable.entries();
  std::vector<nlohmann::ordered_json> d;
  std::string names;
  for (const train::TrainFamilies::Entry& family : families) {
    d.push_back(train::to_json(train::defaults_for(trainable, std::string(family.name))));
    names += (names.empty() ? "" : " / ") + std::string(family.name);
  }
  std::string table = "Defaults by --arch (" + names + "; -: refused for that --arch):\n";
  std::vector<std::string> only(families.size());
  std::string rest = "Otherwise:";
  for (const auto& [name, value] : d[0].items()) {
    if (name == "arch" || name == "data") continue;
    size_t takers = 0, first = 0;
    bool same = true;
    for (size_t i = 0; i < families.size(); ++i) {
      if (!trainable.takes_flag(*families[i].family, name)) continue;
      if (takers++ == 0) first = i;
      same = same && d[i][name] == d[first][name];
    }
    if (takers == 1) {
      only[first] += " --" + name + " " + d[first][name].dump();
    } else if (same && takers == families.size()) {
      rest += " --" + name + " " + value.dump();
    } else {
      table += "  --" + name + ": ";
      for (size_t i = 0; i < families.size(); ++i) {
        table += i > 0 ? " / " : "";
        table += trainable.takes_flag(*families[i].family, name) ? d[i][name].dump() : "-";
      }
      table += "\n";
    }
  }
  for (size_t i = 0; i < families.size(); ++i) {
    if (!only[i].empty())
      table += wrapped("Only --arch " + std::string(families[i].name) + ":" + only[i]) + "\n";
  }
  return table + wrapped(rest);
}

}  // namespace

void register_train(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train gpt2, evermind or microgpt on your own text, in a run directory you can resume");
  cmd->add_option("--out", f->out, "Run directory for a new run (created; must be new or empty)");
  cmd->add_option("--resume", f->resume,
                  "Continue the run in this directory from its last checkpoint");
  cmd->add_option("--peak-gflops", f->peak_gflops,
                  "This machine's peak GFLOP/s, to show MFU (model FLOPs utilization)");
  cmd->add_option("--config", f->config_file,
                  "Settings from a TOML (.toml) or JSON (.json) file: these flags' names without "
                  "-- as keys (n-layer = 4, or n_layer), with the flags given here overriding it");
  train::RunConfig::visit(f->config, [&](const char* name, auto& value, train::FieldKind) {
    using V = std::decay_t<decltype(value)>;
    const std::string flag = std::string("--") + name;
    const std::string& help = kHelp.at(name);
    // No defaults shown per flag: they depend on --arch (the footer lists them).
    // (--bias takes true or false: its default is true.)
    f->options[name] = std::is_same_v<V, bool> && flag != "--bias"
                           ? cmd->add_flag(flag, value, help)
                           : cmd->add_option(flag, value, help);
    if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>)
      f->options[name]->check(decimal_integer<V>());
    if (flag == "--threads") f->options[name]->check(CLI::Range(1, max_threads()));
  });
  cmd->footer(defaults_table() + "\n" + kGpt2TrainingLevelsNote);
  cmd->callback([f] { run(*f); });
}

}  // namespace tinylm::cli
