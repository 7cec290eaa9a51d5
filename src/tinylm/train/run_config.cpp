#include "tinylm/train/run_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <type_traits>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/optim/schedule.h"
#include "tinylm/train/batches.h"
#include "tinylm/train/family.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/nanogpt_keys.h"
#include "tinylm/train/run_tokenizer.h"

namespace tinylm::train {

using json = nlohmann::ordered_json;

RunConfig defaults_for(const TrainFamilies& families, const std::string& arch) {
  RunConfig c;
  c.arch = arch;
  families.find(arch).apply_defaults(c);
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
      if constexpr (std::is_same_v<V, int64_t>) {  // (an unsigned one past INT64_MAX would wrap)
        return it->is_number_integer() && (!it->is_number_unsigned() ||
                                           it->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
      }
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
      if (found) continue;
      const std::string hint = nanogpt_hint(NanoGptScript::train, key, "");
      fail(source, ": unknown setting '", key, "'", hint.empty() ? "" : " (" + hint + ")");
    }
  }
}

void check_resume_flags(const RunConfig& stored, const json& given) {
  const json was = to_json(stored);
  RunConfig::visit(stored, [&](const char* name, const auto&, FieldKind kind) {
    const auto it = given.find(name);
    if (kind == FieldKind::cadence || it == given.end() || *it == was[name]) return;
    throw FlagError(cat("--", name, " ", it->dump(), " differs from the run's ", was[name].dump(),
                        ": it changes the run, so it cannot change on --resume (start a new run "
                        "with --out, or --init-from a checkpoint)"));
  });
}

namespace {

bool finite_at_least(double v, double lo) { return std::isfinite(v) && v >= lo; }

// A named choice through its parser, whose Error lists the choices, prefixed with the flag.
template <class Parse>
void check_choice(const char* flag, const std::string& value, Parse&& parse) {
  try {
    parse(value);
  } catch (const Error& e) {
    fail(flag, ": ", e.what());
  }
}

void check_choices(const RunConfig& c) {
  check_choice("--overlap", c.overlap, distributed::parse_overlap);
  check_choice("--order", c.order, parse_data_order);
  check_choice("--optimizer", c.optimizer, parse_optimizer);
  check_choice("--schedule", c.schedule, optim::parse_lr_decay);
  check_choice("--decay", c.decay, parse_decay_scope);
  parse_compute_dtype(c.compute);
}

// The optimizer's numbers (the loop checks them too, but only once the data is tokenized).
void check_optimizer(const RunConfig& c) {
  check(finite_at_least(c.lr, 0.0), "--lr must be finite and >= 0 (got ", c.lr, ")");
  check(finite_at_least(c.min_lr, 0.0) && c.min_lr <= c.lr, "--min-lr must be in [0, --lr ", c.lr,
        "] (got ", c.min_lr, ")");
  check(c.warmup >= 0, "--warmup must be >= 0 (got ", c.warmup, ")");
  check(finite_at_least(c.beta1, 0.0) && c.beta1 < 1.0, "--beta1 must be in [0, 1) (got ", c.beta1,
        ")");
  check(finite_at_least(c.beta2, 0.0) && c.beta2 < 1.0, "--beta2 must be in [0, 1) (got ", c.beta2,
        ")");
  check(std::isfinite(c.eps) && c.eps > 0.0, "--eps must be finite and > 0 (got ", c.eps, ")");
  check(finite_at_least(c.weight_decay, 0.0), "--weight-decay must be finite and >= 0 (got ",
        c.weight_decay, ")");
  check(finite_at_least(c.clip, 0.0), "--clip must be finite and >= 0 (0: off; got ", c.clip, ")");
  check(finite_at_least(c.aux_loss_coef, 0.0), "--aux-loss-coef must be finite and >= 0 (got ",
        c.aux_loss_coef, ")");
  check(c.max_bad_steps >= 0, "--max-bad-steps must be >= 0 (got ", c.max_bad_steps, ")");
}

void validate_flags(const TrainFamilies& families, const RunConfig& c) {
  const TrainFamily& family = families.find(c.arch);
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
  check(c.sample_every >= 0, "--sample-every must be >= 0 (0: never; got ", c.sample_every, ")");
  check(c.keep >= 1, "--keep must be >= 1 (got ", c.keep, ")");
  if (c.threads != 0) check_threads(c.threads);  // 0: all cores (the default)
  check_choices(c);
  check_optimizer(c);
  check(c.dropout >= 0.0 && c.dropout < 1.0, "--dropout must be in [0, 1) (got ", c.dropout, ")");
  if (parse_tokenizer_choice(c.tokenizer).made == MadeVocab::none && !c.tokenizer.empty()) {
    check(std::filesystem::exists(c.tokenizer), "--tokenizer ", c.tokenizer,
          ": no such file or directory (or char, byte, bpe:N)");
  }
  if (const int gpu = kernels::vulkan::parse_device(c.device); gpu >= 0)
    kernels::vulkan::check_gpu(gpu);
  check(family.gpu || c.device == "cpu", "--device applies to --arch ",
        families.names([](const TrainFamily& f) { return f.gpu; }), " only");
  check(!family.one_document_per_step || (c.batch == 1 && c.accum == 1), "--arch ", c.arch,
        " trains one document per step: --batch and --accum must be 1");
  // The model shapes a fresh run builds from flags (--init-from brings its own).
  if (c.init_from.empty()) family.check_fresh_model(c);
  validate_sizes(c);
}

}  // namespace

void validate(const TrainFamilies& families, const RunConfig& c) {
  try {
    validate_flags(families, c);
  } catch (const FlagError&) {
    throw;
  } catch (const Error& e) {
    throw FlagError(e.what());
  }
}

DType parse_compute_dtype(const std::string& name) {
  check(name == "f32" || name == "bf16" || name == "f16",
        "--compute-dtype must be f32, bf16 or f16 (got ", name, ")");
  return parse_dtype(name);
}

gpt2::Config gpt2_config(const RunConfig& c, int vocab) {
  gpt2::Config g;
  g.vocab_size = vocab;
  const auto narrow = [](int64_t v) {
    return static_cast<int>(std::clamp<int64_t>(v, 0, 1 << 30));
  };
  g.n_layer = narrow(c.n_layer);
  g.n_head = narrow(c.n_head);
  g.n_embd = narrow(c.n_embd);
  g.n_positions = narrow(c.block_size);
  return g;
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
}

}  // namespace tinylm::train
