// microgpt's record: its safetensors checkpoints, which `tinylm microgpt --load` samples from
// (with microgpt.py's RNG), `train --init-from` continues, and generate, serve and perplexity
// run through the decode interface (generate/microgpt_backend.cpp).
#include <algorithm>
#include <cstdio>

#include "tinylm/checkpoints/microgpt_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/family.h"
#include "tinylm/tokenizers/char_and_byte_vocab.h"
#include "tinylm/train/family.h"

namespace tinylm::families {

namespace {

const char* recognise(const checkpoints::Sniffed& file) {
  return file.format == checkpoints::Format::safetensors &&
                 file.safetensors_header.find("\"tinylm-microgpt-") != std::string::npos
             ? "a microgpt checkpoint (safetensors)"
             : nullptr;
}

// --tokenizer when given, else the checkpoint's character set with BOS as <|endoftext|>.
BpeTokenizer load_tokenizer(const std::string& explicit_path, const checkpoints::Sniffed& model) {
  if (!explicit_path.empty()) return tokenizer_from_path(explicit_path);
  const checkpoints::MicrogptCheckpoint ck = checkpoints::load_microgpt(model.path);
  try {
    return microgpt_vocabulary(ck.chars);
  } catch (const Error& e) {
    fail(model.path, ": ", e.what());
  }
}

// The model that decodes, and the documents and weights its run drew from the RNG before it
// sampled, which every sample's RNG replays (a file without the count: none).
struct Loaded {
  std::unique_ptr<microgpt::Model> model;
  generate::MicrogptReplay replay;
};

DecodeModel load_decoder(const checkpoints::Sniffed& file, const LoadOptions&) {
  Timer load;
  const checkpoints::MicrogptCheckpoint ck = checkpoints::load_microgpt(file.path);
  auto loaded = std::make_shared<Loaded>();
  loaded->model = microgpt::make_model(ck.config, microgpt::Engine::tensor);
  std::copy(ck.params.begin(), ck.params.end(), loaded->model->params().begin());
  loaded->replay = {ck.documents.value_or(0), static_cast<int64_t>(ck.params.size())};
  char line[128];
  std::snprintf(line, sizeof line, ": %zu parameters (f64) in %.1f ms", ck.params.size(),
                load.elapsed_ms());
  return decode_model(
      std::move(loaded), [](Loaded& l) { return generate::microgpt_backend(*l.model, l.replay); },
      "loaded " + file.path + line);
}

}  // namespace

extern const Family microgpt_family{
    .name = "microgpt",
    .title = "microgpt",
    .expected = "microgpt (a safetensors file of tinylm microgpt --save; --arch microgpt)",
    .recognise = recognise,
    .load_tokenizer = load_tokenizer,
    .load_decoder = load_decoder,
    .f32_only = true,
    .prompt_allows_special = true,  // BOS is <|endoftext|>
    .temperature = 0.5,             // microgpt.py's
    .documents_start_with_eot = true,
    .perplexity = true,
    .training = &train::train_family("microgpt"),
};

}  // namespace tinylm::families
