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

// Parameters, gradients and two optimizer moments, in f32: a fresh model's shape is refused
// when they alone would not fit in this machine's memory, rather than failing in the allocator.
void check_fits_memory(const std::string& what, int64_t params) {
  const double need = 16.0 * static_cast<double>(params);
  const double have = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                      static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  check(have <= 0 || need <= have, what, ": ", params, " parameters need about ",
        static_cast<int64_t>(need / 1e9 + 1),
        " GB for weights, gradients and optimizer moments; this machine has ",
        static_cast<int64_t>(have / 1e9), " GB");
}

// --- GPT-2: RunConfig's own defaults and --preset's shape; Hugging Face weights; f32.

constexpr int kGpt2Vocab = 50257;  // a fresh model's size before its tokenizer is read

void gpt2_defaults(RunConfig& c) {
  const gpt2::Config g = gpt2::preset(c.preset);
  c.n_layer = g.n_layer;
  c.n_head = g.n_head;
  c.n_embd = g.n_embd;
  c.block_size = g.n_positions;
  c.seq_len = c.block_size;
}

// The shape fields not given come from --preset, and --seq-len from --block-size (nanoGPT's
// block_size is both). A run stored before these flags existed (no "bias") had its preset's.
void gpt2_complete(RunConfig& c, const nlohmann::ordered_json& given, bool resumed) {
  const bool before_shape_flags = resumed && !given.contains("bias");
  const auto from_preset = [&](const char* name) {
    return before_shape_flags || !given.contains(name);
  };
  gpt2::Config g;
  try {
    g = gpt2::preset(c.preset);
  } catch (const Error& e) {
    throw FlagError(cat("--preset: ", e.what()));
  }
  if (from_preset("n-layer")) c.n_layer = g.n_layer;
  if (from_preset("n-head")) c.n_head = g.n_head;
  if (from_preset("n-embd")) c.n_embd = g.n_embd;
  if (from_preset("block-size")) c.block_size = g.n_positions;
  if (!given.contains("seq-len")) c.seq_len = c.block_size;
}

void gpt2_check_fresh(const RunConfig& c) {
  try {
    gpt2_config(c, kGpt2Vocab).validate();
  } catch (const Error& e) {
    fail("--arch gpt2 shape (--n-layer ", c.n_layer, ", --n-head ", c.n_head, ", --n-embd ",
         c.n_embd, ", --block-size ", c.block_size, "): ", e.what());
  }
  check(c.seq_len <= c.block_size, "--seq-len ", c.seq_len, " is longer than the model's ",
        c.block_size, " positions: lower --seq-len or raise --block-size");
  check_fits_memory("--arch gpt2 shape",
                    static_cast<int64_t>(gpt2::param_layout(gpt2_config(c, kGpt2Vocab)).size()));
}

gpt2::Config gpt2_model_config(const RunConfig& c) {
  return c.init_from.empty() ? gpt2_config(c, kGpt2Vocab)
                             : checkpoints::read_gpt2_checkpoint_config(c.init_from);
}

ModelSize gpt2_size(const RunConfig& c) {
  const gpt2::Config g = gpt2_model_config(c);
  return {gpt2::param_layout(g).size(), checkpoints::gpt2_saved_bytes(g)};
}

void gpt2_check_device(const RunConfig& c) {
  const int gpu = kernels::vulkan::parse_device(c.device);
  if (gpu < 0) return;
  check_gpt2_fits_gpu(gpu, gpt2_model_config(c),
                      {static_cast<int>(shard_rows(c)), static_cast<int>(c.seq_len),
                       static_cast<float>(c.dropout), parse_compute_dtype(c.compute)},
                      c.devices);
}

// The starting weights' own vocabulary, else the bundled one.
std::string gpt2_tokenizer(const RunConfig& c, std::string (*bundled_vocab)(), std::FILE* log) {
  const fs::path init(c.init_from);
  const bool own = !c.init_from.empty() && fs::is_directory(init) &&
                   (fs::exists(init / "tokenizer.json") || fs::exists(init / "vocab.json") ||
                    fs::exists(init / "encoder.json"));
  if (own) return init.string();
  std::string bundled = bundled_vocab();
  if (!c.init_from.empty()) {
    std::fprintf(log,
                 "tokenizer: the bundled GPT-2 vocabulary (%s has no tokenizer.json, vocab.json or "
                 "encoder.json; pass --tokenizer for another)\n",
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
  check_fits_memory("--arch evermind shape", evermind::param_count(e));
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
     .shape = "preset n-layer n-head n-embd block-size bias",
     .options = "tokenizer seq-len dropout compute-dtype sample-every",
     .gpu = true,
     .apply_defaults = gpt2_defaults,
     .complete = gpt2_complete,
     .check_fresh_model = gpt2_check_fresh,
     .model_size = gpt2_size,
     .default_tokenizer = gpt2_tokenizer,
     .check_device = gpt2_check_device,
     .run = run_gpt2},
    {.name = "evermind",
     .shape = "n-layer d-model conv-kernel hidden-dim experts top-k vocab-size",
     .options = "tokenizer seq-len aux-loss-coef mixed-precision checkpoint-activations",
     .apply_defaults = evermind_defaults,
     .check_fresh_model = evermind_check_fresh,
     .model_size = evermind_size,
     .default_tokenizer = evermind_tokenizer,
     .run = run_evermind},
    {.name = "microgpt",
     .shape = "n-layer n-head n-embd block-size",
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

namespace {

bool takes(std::string_view list, std::string_view flag) {
  for (size_t at = 0; at < list.size();) {
    const size_t end = std::min(list.find(' ', at), list.size());
    if (list.substr(at, end - at) == flag) return true;
    at = end + 1;
  }
  return false;
}

bool takes(const TrainFamily& f, std::string_view flag) {
  return takes(f.shape, flag) || takes(f.options, flag);
}

}  // namespace

bool takes_flag(const TrainFamily& family, std::string_view flag) {
  if (takes(family, flag)) return true;
  for (const TrainFamily& f : kFamilies) {
    if (takes(f, flag)) return false;
  }
  return true;
}

void check_family_flags(const TrainFamily& family, const nlohmann::ordered_json& given) {
  const bool init_from = given.contains("init-from") && given["init-from"] != "";
  for (const auto& item : given.items()) {
    const std::string& flag = item.key();
    if (init_from && takes(family.shape, flag)) {
      throw FlagError(cat("--", flag, " sets a fresh model's shape; the model from --init-from ",
                          "has its own (leave --", flag, " out)"));
    }
    if (takes_flag(family, flag)) continue;
    std::string others;
    for (const TrainFamily& f : kFamilies) {
      if (takes(f, flag)) others += (others.empty() ? "" : " and ") + std::string(f.name);
    }
    throw FlagError(
        cat("--", flag, " does not apply to --arch ", family.name, " (only to ", others, ")"));
  }
}

const TrainFamily& train_family(std::string_view arch) {
  for (const TrainFamily& f : kFamilies) {
    if (f.name == arch) return f;
  }
  throw FlagError(cat("--arch ", arch, ": unknown (expected ",
                      family_names([](const TrainFamily&) { return true; }), ")"));
}

}  // namespace tinylm::train
