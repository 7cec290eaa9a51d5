// EvermindLM's record: EVL0 checkpoints, with the tokenizer saved beside them.
#include <cstdio>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/family.h"
#include "tinylm/train/family.h"

namespace tinylm::families {

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
    .training = &train::train_family("evermind"),
};

}  // namespace tinylm::families
