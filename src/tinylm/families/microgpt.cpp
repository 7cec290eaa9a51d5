// microgpt's record: its safetensors checkpoints, which `tinylm microgpt --load` samples from
// (with microgpt.py's RNG), `train --init-from` continues, and generate, serve and perplexity
// run through the decode interface (generate/microgpt_backend.cpp); how it trains.
#include <algorithm>
#include <cstdio>

#include "tinylm/checkpoints/microgpt_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/family.h"
#include "tinylm/models/microgpt/config.h"
#include "tinylm/tokenizers/char_and_byte_vocab.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/run_session.h"

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

// How it trains (train/family.h): microgpt.py's settings, one document per step, a character
// vocabulary, f64.

void microgpt_defaults(train::RunConfig& c) {
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

void microgpt_check_fresh(const train::RunConfig& c) {
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
train::ModelSize microgpt_size(const train::RunConfig& c) {
  microgpt::Config m;
  m.n_layer = static_cast<int>(c.n_layer);
  m.n_embd = static_cast<int>(c.n_embd);
  m.n_head = static_cast<int>(c.n_head);
  m.block_size = static_cast<int>(c.block_size);
  m.vocab_size = 256;
  const uint64_t params = microgpt::param_layout(m).size();
  return {params, 8 * params};
}

std::string no_tokenizer(const train::RunConfig&, std::FILE*) { return ""; }

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
    .training = {.shape = "n-layer n-head n-embd block-size",
                 .one_document_per_step = true,
                 .token_file = false,
                 .param_bytes = 8,
                 .apply_defaults = microgpt_defaults,
                 .check_fresh_model = microgpt_check_fresh,
                 .model_size = microgpt_size,
                 .default_tokenizer = no_tokenizer,
                 .run = train::run_microgpt},
};

}  // namespace tinylm::families
