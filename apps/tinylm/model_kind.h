#pragma once
// What a --model path is, read from the file itself, so commands need no --arch where the
// file says, and a wrong kind is one line: "X: this is an EvermindLM checkpoint (EVL0);
// generate expected GPT-2 ...".
#include <string>

namespace tinylm::cli {

enum class ModelKind {
  gpt2,      // a Hugging Face GPT-2 directory, a safetensors file with GPT-2's tensor names, or
             // a GGUF file of architecture gpt2
  evermind,  // an EVL0 checkpoint
  microgpt,  // a tinylm microgpt safetensors checkpoint
  gguf,      // a GGUF file of an architecture tinylm does not run (a gpt2 one is gpt2)
  unknown,   // none of these (the loader of the kind asked for reports why)
};

struct DetectedModel {
  ModelKind kind = ModelKind::unknown;
  std::string path;  // what to load: a config.json's directory, a run's latest model, ...
  std::string what;  // in words: "a GPT-2 model directory", "an EvermindLM checkpoint (EVL0)"
};

// Looks at `path` (a directory, a run directory, a config.json, or a weights file) without
// loading it. A path that does not exist is unknown (the loader names it).
DetectedModel detect_model(const std::string& path);

// "gpt2", "evermind", "microgpt", "gguf", "unknown".
const char* model_kind_name(ModelKind kind);

// The model `path` for a command that takes the kinds in `accepted` ("gpt2", "evermind"):
// --arch when given (the file must agree), else what the file says. Throws a one-line error
// naming what the file is and what the command expected.
DetectedModel resolve_model(const std::string& command, const std::string& path,
                            const std::string& arch, std::initializer_list<ModelKind> accepted);

}  // namespace tinylm::cli
