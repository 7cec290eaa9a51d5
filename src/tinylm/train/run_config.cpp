#include "tinylm/train/run_config.h"

#include <unistd.h>

#include <cmath>
#include <type_traits>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/train/comm.h"

namespace tinylm::train {

using json = nlohmann::ordered_json;

RunConfig defaults_for(const std::string& arch) {
  RunConfig c;
  c.arch = arch;
  if (arch == "evermind") {
    c.lr = 1e-3;
    c.min_lr = 1e-4;
    c.warmup = 20;
    c.batch = 8;
    c.seq_len = 128;
  } else if (arch == "microgpt") {
    c.n_layer = 1;
    c.batch = 1;  // one document per step
    c.lr = 0.01;
    c.min_lr = 0.0;
    c.warmup = 0;
    c.schedule = "linear";
    c.beta1 = 0.85;
    c.beta2 = 0.99;
    c.weight_decay = 0.0;
    c.clip = 0.0;
    c.seed = 42;
    c.eval_batches = 200;  // validation documents
  }
  return c;
}

json to_json(const RunConfig& c) {
  json j;
  RunConfig::visit(c, [&](const char* name, const auto& v, FieldKind) { j[name] = v; });
  return j;
}

void merge_json(RunConfig& c, const json& j, const std::string& source) {
  check(j.is_object(), source, ": the run configuration is not a JSON object");
  size_t known = 0;
  RunConfig::visit(c, [&](const char* name, auto& v, FieldKind) {
    const auto it = j.find(name);
    if (it == j.end()) return;
    ++known;
    using V = std::decay_t<decltype(v)>;
    const bool ok = [&] {
      if constexpr (std::is_same_v<V, bool>) return it->is_boolean();
      if constexpr (std::is_same_v<V, std::string>) return it->is_string();
      if constexpr (std::is_same_v<V, std::vector<std::string>>) {
        if (!it->is_array()) return false;
        for (const json& e : *it) {
          if (!e.is_string()) return false;
        }
        return true;
      }
      if constexpr (std::is_same_v<V, double>) return it->is_number();
      if constexpr (std::is_same_v<V, uint64_t>) return it->is_number_unsigned();
      if constexpr (std::is_same_v<V, int64_t>) return it->is_number_integer();
      return false;
    }();
    check(ok, source, ": '", name, "' has the wrong type (", it->type_name(), ")");
    v = it->get<V>();
  });
  if (known != j.size()) {
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      bool found = false;
      RunConfig::visit(c, [&](const char* name, auto&, FieldKind) { found |= key == name; });
      check(found, source, ": unknown setting '", key, "'");
    }
  }
}

void check_resume_flags(const RunConfig& stored, const json& given) {
  const json was = to_json(stored);
  RunConfig::visit(stored, [&](const char* name, const auto&, FieldKind kind) {
    const auto it = given.find(name);
    if (kind == FieldKind::cadence || it == given.end() || *it == was[name]) return;
    fail("--", name, " ", it->dump(), " differs from the run's ", was[name].dump(),
         ": it changes the run, so it cannot change on --resume (start a new run with --out, or "
         "--init-from a checkpoint)");
  });
}

void validate(const RunConfig& c) {
  check(c.arch == "gpt2" || c.arch == "evermind" || c.arch == "microgpt", "--arch ", c.arch,
        ": unknown (expected gpt2, evermind or microgpt)");
  check(!c.data.empty(), "--data: no training text given");
  check(c.val_fraction >= 0.0 && c.val_fraction < 1.0, "--val-fraction must be in [0, 1) (got ",
        c.val_fraction, ")");
  check(c.batch >= 1 && c.accum >= 1, "--batch and --accum must be >= 1");
  check(c.seq_len >= 1, "--seq-len must be >= 1 (got ", c.seq_len, ")");
  check(c.devices >= 1 && c.batch % c.devices == 0, "--batch ", c.batch,
        " does not split into --devices ", c.devices, " equal shards (the batch must be a ",
        "multiple of the devices)");
  check(c.steps >= 0, "--steps must be >= 0 (got ", c.steps, ")");
  check(c.eval_every >= 0 && c.save_every >= 0 && c.log_every >= 1,
        "--eval-every and --save-every must be >= 0, --log-every >= 1");
  check(c.eval_batches >= 0, "--eval-batches must be >= 0");
  check(c.keep >= 1, "--keep must be >= 1 (got ", c.keep, ")");
  if (c.threads != 0) check_threads(c.threads);  // 0: all cores (the default)
  parse_overlap(c.overlap);
  check(std::isfinite(c.lr) && c.lr >= 0.0, "--lr must be finite and >= 0 (got ", c.lr, ")");
  check(c.dropout >= 0.0 && c.dropout < 1.0, "--dropout must be in [0, 1) (got ", c.dropout, ")");
  check(c.arch == "gpt2" || (c.compute == "f32" && c.dropout == 0.0),
        "--compute-dtype and --dropout apply to --arch gpt2 only");
  check(c.arch == "evermind" || (!c.mixed_precision && !c.checkpoint_activations),
        "--mixed-precision and --checkpoint-activations apply to --arch evermind only");
  check(c.arch != "microgpt" || (c.batch == 1 && c.accum == 1),
        "--arch microgpt trains one document per step: --batch and --accum must be 1");
  validate_sizes(c);
}

evermind::Config evermind_config(const RunConfig& c, int64_t vocab) {
  evermind::Config e;
  e.vocab_size = vocab;
  e.d_model = c.d_model;
  e.n_layers = c.n_layer;
  e.conv_kernel = c.conv_kernel;
  e.hidden_dim = c.hidden_dim > 0 ? c.hidden_dim : 2 * c.d_model;
  e.n_experts = c.n_experts;
  e.top_k = c.top_k;
  e.seed = c.seed;
  return e;
}

void validate_sizes(const RunConfig& c) {
  check(c.seq_len <= RunLimits::seq_len, "--seq-len ", c.seq_len, " is implausibly large (at most ",
        RunLimits::seq_len, "; see docs/limits.md)");
  check(c.batch <= RunLimits::rows && c.accum <= RunLimits::rows && c.devices <= RunLimits::rows,
        "--batch, --accum and --devices must each be at most ", RunLimits::rows,
        " (see docs/limits.md)");
  check(c.batch * c.seq_len <= RunLimits::batch_tokens,
        "--batch x --seq-len = ", c.batch * c.seq_len,
        " tokens per micro-batch is implausibly many (at most ", RunLimits::batch_tokens,
        "; see docs/limits.md)");
  if (c.arch != "evermind" || !c.init_from.empty()) return;
  // A fresh EvermindLM: its shape, before the tokenizer is trained or anything is written.
  // A given tokenizer's vocabulary is checked on load.
  const evermind::Config e = evermind_config(c, c.tokenizer.empty() ? c.vocab_size : 1);
  check(!c.tokenizer.empty() || c.vocab_size >= 257, "--vocab-size ", c.vocab_size,
        " is too small (the 256 bytes and <|endoftext|> need 257)");
  check(c.hidden_dim >= 0, "--hidden-dim must be >= 0 (0: 2 x --d-model; got ", c.hidden_dim, ")");
  try {
    evermind::validate(e);
  } catch (const Error& err) {
    fail("--arch evermind shape: ", err.what());
  }
  // Parameters, gradients and two optimizer moments, in f32: refused when they alone would
  // not fit in this machine's memory, rather than failing in the allocator.
  const double need = 16.0 * static_cast<double>(evermind::param_count(e));
  const double have = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                      static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  check(have <= 0 || need <= have, "--arch evermind shape: ", evermind::param_count(e),
        " parameters need about ", static_cast<int64_t>(need / 1e9 + 1),
        " GB for weights, gradients and optimizer moments; this machine has ",
        static_cast<int64_t>(have / 1e9), " GB");
}

}  // namespace tinylm::train
