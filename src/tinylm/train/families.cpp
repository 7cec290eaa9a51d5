// The training families' records (family.h): what differs between GPT-2, EvermindLM and
// microgpt before their run entries take over, one section per family.
#include <unistd.h>

#include <filesystem>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/models/gpt2/config.h"
#include "tinylm/models/microgpt/config.h"
#include "tinylm/train/family.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/run_session.h"

namespace tinylm::train {

namespace fs = std::filesystem;

namespace {

// --- GPT-2: RunConfig's own defaults; a preset or Hugging Face weights; f32.

void gpt2_defaults(RunConfig&) {}

void gpt2_check_fresh(const RunConfig& c) {
  const gpt2::Config g = gpt2::preset(c.preset);
  check(c.seq_len <= g.n_positions, "--seq-len must be at most ", g.n_positions, " for preset ",
        c.preset, " (got ", c.seq_len, "; its model has ", g.n_positions, " positions)");
}

ModelSize gpt2_size(const RunConfig& c) {
  const gpt2::Config g = c.init_from.empty()
                             ? gpt2::preset(c.preset)
                             : checkpoints::read_gpt2_checkpoint_config(c.init_from);
  return {gpt2::param_layout(g).size(), checkpoints::gpt2_saved_bytes(g)};
}

void gpt2_check_device(const RunConfig& c) {
  const int gpu = kernels::vulkan::parse_device(c.device);
  if (gpu < 0) return;
  const gpt2::Config g = c.init_from.empty()
                             ? gpt2::preset(c.preset)
                             : checkpoints::read_gpt2_checkpoint_config(c.init_from);
  check_gpt2_fits_gpu(gpu, g,
                      {static_cast<int>(shard_rows(c)), static_cast<int>(c.seq_len),
                       static_cast<float>(c.dropout), parse_compute_dtype(c.compute)},
                      c.devices);
}

// The starting weights' own vocabulary, else the bundled one.
std::string gpt2_tokenizer(const RunConfig& c, std::string (*bundled_vocab)(), std::FILE* log) {
  const fs::path init(c.init_from);
  const bool own = !c.init_from.empty() && fs::is_directory(init) &&
                   (fs::exists(init / "vocab.json") || fs::exists(init / "encoder.json"));
  if (own) return init.string();
  std::string bundled = bundled_vocab();
  if (!c.init_from.empty()) {
    std::fprintf(log,
                 "tokenizer: the bundled GPT-2 vocabulary (%s has no vocab.json or "
                 "encoder.json; pass --tokenizer DIR for another)\n",
                 c.init_from.c_str());
  }
  return bundled;
}

// --- EvermindLM: a BPE trained on the data; EVL0 checkpoints; f32.

void evermind_defaults(RunConfig& c) {
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup = 20;
  c.batch = 8;
  c.seq_len = 128;
}

// The whole shape, before the tokenizer is trained or anything is written. A given
// tokenizer's vocabulary is checked on load.
void evermind_check_fresh(const RunConfig& c) {
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

ModelSize evermind_size(const RunConfig& c) {
  const evermind::Config e = c.init_from.empty() ? evermind_config(c, c.vocab_size)
                                                 : checkpoints::read_evl_header(c.init_from).config;
  return {static_cast<uint64_t>(evermind::param_count(e)),
          checkpoints::evl_file_bytes(e, checkpoints::EvlPrecision::f32)};
}

// The ids of --init-from's weights come from the tokenizer saved with them (run_evermind.cpp
// writes model.tokenizer.json beside model.evl): a new one trained on --data would give the
// old weights other tokens' ids.
std::string evermind_tokenizer(const RunConfig& c, std::string (*)(), std::FILE* log) {
  if (c.init_from.empty()) return "";
  const std::string saved = checkpoints::evl_tokenizer_path(c.init_from);
  check(fs::exists(saved), "--init-from ", c.init_from,
        ": no tokenizer saved with the model (looked for ", saved,
        "); pass the one it was trained with: --tokenizer FILE");
  std::fprintf(log, "tokenizer: %s (saved with the model)\n", saved.c_str());
  return saved;
}

// --- microgpt: microgpt.py's settings, one document per step, a character vocabulary; f64.

void microgpt_defaults(RunConfig& c) {
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

void microgpt_check_fresh(const RunConfig& c) {
  const auto at_most = [](int64_t v, int64_t hi, const char* flag) {
    check(v >= 1 && v <= hi, "--", flag, " must be in [1, ", hi, "] (got ", v, ")");
  };
  at_most(c.n_layer, 1024, "n-layer");
  at_most(c.n_head, 1 << 16, "n-head");
  at_most(c.n_embd, 1 << 16, "n-embd");
  at_most(c.block_size, 1 << 16, "block-size");
  check(c.n_embd % c.n_head == 0, "--n-embd ", c.n_embd, " must be a multiple of --n-head ",
        c.n_head);
}

// A character vocabulary (taken as 256 here), f64 parameters.
ModelSize microgpt_size(const RunConfig& c) {
  microgpt::Config m;
  m.n_layer = static_cast<int>(c.n_layer);
  m.n_embd = static_cast<int>(c.n_embd);
  m.n_head = static_cast<int>(c.n_head);
  m.block_size = static_cast<int>(c.block_size);
  m.vocab_size = 256;
  const uint64_t params = microgpt::param_layout(m).size();
  return {params, 8 * params};
}

std::string no_tokenizer(const RunConfig&, std::string (*)(), std::FILE*) { return ""; }

// constinit: the family table's records (families/) take these addresses while they are
// initialized themselves, before any dynamic initialization could have run.
constinit const TrainFamily kFamilies[] = {
    {.name = "gpt2",
     .dropout_and_compute = true,
     .gpu = true,
     .apply_defaults = gpt2_defaults,
     .check_fresh_model = gpt2_check_fresh,
     .model_size = gpt2_size,
     .default_tokenizer = gpt2_tokenizer,
     .check_device = gpt2_check_device,
     .run = run_gpt2},
    {.name = "evermind",
     .mixed_precision = true,
     .apply_defaults = evermind_defaults,
     .check_fresh_model = evermind_check_fresh,
     .model_size = evermind_size,
     .default_tokenizer = evermind_tokenizer,
     .run = run_evermind},
    {.name = "microgpt",
     .one_document_per_step = true,
     .token_file = false,
     .param_bytes = 8,
     .apply_defaults = microgpt_defaults,
     .check_fresh_model = microgpt_check_fresh,
     .model_size = microgpt_size,
     .default_tokenizer = no_tokenizer,
     .run = run_microgpt},
};

}  // namespace

std::span<const TrainFamily> train_families() { return kFamilies; }

std::string family_names(bool (*has)(const TrainFamily&)) {
  std::vector<std::string_view> names;
  for (const TrainFamily& f : kFamilies) {
    if (has(f)) names.push_back(f.name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

const TrainFamily& train_family(std::string_view arch) {
  for (const TrainFamily& f : kFamilies) {
    if (f.name == arch) return f;
  }
  throw FlagError(cat("--arch ", arch, ": unknown (expected ",
                      family_names([](const TrainFamily&) { return true; }), ")"));
}

}  // namespace tinylm::train
