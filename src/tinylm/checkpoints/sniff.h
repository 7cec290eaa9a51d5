#pragma once
// What a model path is, read from the file itself (its first bytes; a safetensors header's
// tensor names; a GGUF's architecture) without loading it. This is the one place tinylm
// decides a file's format: the CLI's --arch checks and the load entries go by it.
#include <string>

namespace tinylm::checkpoints {

enum class Family {
  gpt2,      // a Hugging Face GPT-2 directory, a safetensors file with GPT-2's tensor names, or
             // a GGUF file of architecture gpt2
  evermind,  // an EVL0 checkpoint
  microgpt,  // a tinylm microgpt safetensors checkpoint
  foreign,   // a GGUF file of an architecture tinylm does not run (a gpt2 one is gpt2)
  unknown,   // none of these (the loader of the family asked for reports why)
};

enum class Format {
  missing,       // no such file or directory
  none,          // nothing tinylm reads
  hf_directory,  // config.json + model.safetensors or model.safetensors.index.json
  safetensors,   // one .safetensors file (GPT-2's or microgpt's tensors)
  gguf,          // llama.cpp's container (a file that starts with its magic)
  evl,           // EvermindLM's EVL0 checkpoint
};

struct Sniffed {
  Family family = Family::unknown;
  Format format = Format::none;
  std::string path;  // what to load: a config.json's directory, a run's latest model, ...
  std::string what;  // in words: "a GPT-2 model directory", "an EvermindLM checkpoint (EVL0)"
};

// Looks at `path` (a directory, a run directory of `tinylm train`, a config.json, or a weights
// file). A GGUF file whose metadata does not parse is a GPT-2 GGUF (its loader says what is
// wrong).
Sniffed sniff(const std::string& path);

// "gpt2", "evermind", "microgpt", "gguf" (foreign), "unknown".
const char* family_name(Family family);

}  // namespace tinylm::checkpoints
