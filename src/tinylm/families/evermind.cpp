// EvermindLM's record: EVL0 checkpoints, with the tokenizer saved beside them; how it trains.
#include <cstdio>
#include <filesystem>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/family.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/run_session.h"

namespace tinylm::families {

namespace fs = std::filesystem;

namespace {

const char* recognise(const checkpoints::Sniffed& file) {
  return file.format == checkpoints::Format::evl ? "an EvermindLM checkpoint (EVL0)" : nullptr;
}

// --tokenizer when given (a tokenizer.json or a directory), else the checkpoint's default.
BpeTokenizer load_tokenizer(const std::string& explicit_path, const checkpoints::Sniffed& model) {
  return tokenizer_from_path(explicit_path.empty() ? checkpoints::evl_tokenizer_path(model.path)
                                                   : explicit_path);
}

DecodeModel load_decoder(const checkpoints::Sniffed& file, const LoadOptions&) {
  Timer load;
  const checkpoints::EvlCheckpoint ck =
      checkpoints::load_evl(file.path);  // checks the count against the config
  auto model = std::make_shared<evermind::Model<float>>(ck.config, 2, ck.params);
  char line[128];
  std::snprintf(line, sizeof line, ": %zu parameters (f32) in %.1f ms", model->params().size(),
                load.elapsed_ms());
  return decode_model(std::move(model), generate::evermind_backend, "loaded " + file.path + line);
}

// How it trains (train/family.h): a BPE trained on the data, EVL0 checkpoints, f32.

void evermind_defaults(train::RunConfig& c) {
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup = 20;
  c.batch = 8;
  c.seq_len = 128;
}

// The whole shape, before the tokenizer is trained or anything is written. A given
// tokenizer's vocabulary is checked on load.
void evermind_check_fresh(const train::RunConfig& c) {
  const evermind::Config e = train::evermind_config(c, c.tokenizer.empty() ? c.vocab_size : 1);
  check(!c.tokenizer.empty() || c.vocab_size >= 257, "--vocab-size ", c.vocab_size,
        " is too small (the 256 bytes and <|endoftext|> need 257)");
  check(c.hidden_dim >= 0, "--hidden-dim must be >= 0 (0: 2 x --d-model; got ", c.hidden_dim, ")");
  try {
    evermind::validate(e);
  } catch (const Error& err) {
    fail("--arch evermind shape: ", err.what());
  }
  train::check_fits_memory("--arch evermind shape", evermind::param_count(e));
}

train::ModelSize evermind_size(const train::RunConfig& c) {
  const evermind::Config e = c.init_from.empty() ? train::evermind_config(c, c.vocab_size)
                                                 : checkpoints::read_evl_header(c.init_from).config;
  return {static_cast<uint64_t>(evermind::param_count(e)),
          checkpoints::evl_file_bytes(e, checkpoints::EvlPrecision::f32)};
}

// The ids of --init-from's weights come from the tokenizer saved with them (run_evermind.cpp
// writes model.tokenizer.json beside model.evl): a new one trained on --data would give the
// old weights other tokens' ids.
std::string evermind_tokenizer(const train::RunConfig& c, std::FILE* log) {
  if (c.init_from.empty()) return "";
  const std::string saved = checkpoints::evl_tokenizer_path(c.init_from);
  check(fs::exists(saved), "--init-from ", c.init_from,
        ": no tokenizer saved with the model (looked for ", saved,
        "); pass the one it was trained with: --tokenizer FILE");
  std::fprintf(log, "tokenizer: %s (saved with the model)\n", saved.c_str());
  return saved;
}

}  // namespace

extern const Family evermind_family{
    .name = "evermind",
    .title = "EvermindLM",
    .expected = "EvermindLM (an .evl checkpoint; --arch evermind)",
    .recognise = recognise,
    .load_tokenizer = load_tokenizer,
    .load_decoder = load_decoder,
    .f32_only = true,
    .prompt_allows_special = true,
    .temperature = 0.8,  // these read well on the README's runs (docs/cli.md)
    .top_k = 40,
    .context_without_end = 4096,
    .perplexity = true,
    .training = {.shape = "n-layer d-model conv-kernel hidden-dim experts top-k vocab-size",
                 .options =
                     "tokenizer seq-len aux-loss-coef mixed-precision checkpoint-activations",
                 .apply_defaults = evermind_defaults,
                 .check_fresh_model = evermind_check_fresh,
                 .model_size = evermind_size,
                 .default_tokenizer = evermind_tokenizer,
                 .run = train::run_evermind},
};

}  // namespace tinylm::families
