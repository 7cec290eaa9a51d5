#pragma once
// What a model path is, read from the file itself (its first bytes; a safetensors header; a
// GGUF's architecture) without loading it. This is the one place tinylm decides a file's
// format; which family a file belongs to is each family record's call, on what this read
// (families/: the CLI's --arch checks and the load entries go by that).
#include <optional>
#include <string>

namespace tinylm::checkpoints {

enum class Format {
  missing,       // no such file or directory
  none,          // nothing tinylm reads
  hf_directory,  // config.json + model.safetensors or model.safetensors.index.json
  safetensors,   // one .safetensors file
  gguf,          // llama.cpp's container (a file that starts with its magic)
  evl,           // EvermindLM's EVL0 checkpoint
};

struct Sniffed {
  Format format = Format::none;
  std::string path;  // what to load: a config.json's directory, a run's latest model, ...
  // In words, for a file no family claims: "not a model file tinylm knows", "a GGUF model of
  // architecture 'llama'" (a family's record has its own words for its files).
  std::string what;
  // What the container says, for the family records to recognise it by:
  std::string safetensors_header;  // a safetensors file's JSON header
  // A GGUF's general.architecture: "" when its metadata does not parse or names none (the
  // loader asked for says what is wrong); none when the file is too short to hold any.
  std::optional<std::string> gguf_architecture;
  // The directory named, when `path` is the model.safetensors found in it without a
  // config.json beside it; empty otherwise.
  std::string directory;
};

// Looks at `path` (a directory, a run directory of `tinylm train`, a config.json, or a weights
// file).
Sniffed sniff(const std::string& path);

}  // namespace tinylm::checkpoints
