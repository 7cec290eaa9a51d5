#pragma once
// What the GPT-2 subcommands share: loading a model directory and finding its tokenizer.
#include <CLI/CLI.hpp>
#include <string>

#include "model_kind.h"
#include "tinylm/models/gpt2/model.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::cli {

struct Gpt2Flags {
  std::string model, config, tokenizer, dtype;  // dtype empty: f32, or a quantized GGUF's own
  std::string activations = "f32";              // q8_0, bf16: Model::set_activations
  int threads = 0;
  void add_to(CLI::App* cmd);
};

// The directory of the vendored GPT-2 vocabulary (data/gpt2 of the checkout, or installed
// under share/tinylm/gpt2); throws, naming the places tried, when there is none.
std::string default_vocab_dir();

// The tokenizer: --tokenizer (a tokenizer.json, a directory or a .gguf), else the model's (a
// .gguf's own, or its directory's, when model_dir is not empty), else the vendored GPT-2
// vocabulary.
BpeTokenizer load_tokenizer(const std::string& explicit_path, const std::string& model_dir);

// Loads `file` (flags.model as resolve_model sniffed it) and converts it to the requested dtype;
// prints load time, weight bytes and dtype to stderr.
gpt2::Model load_model(const Gpt2Flags& flags, const DetectedModel& file);

}  // namespace tinylm::cli
