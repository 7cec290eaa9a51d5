#pragma once
// The family table: one record per model family (GPT-2, EvermindLM, microgpt) saying what the
// CLI, `generate`, `serve` and `perplexity` need to know of it: its name, how its files are
// recognised, how it loads for decoding, its generation defaults and which commands take it.
// It also holds how the family trains: train/ is given the list (trainable()).
// Commands ask the table (by name, by file, by capability) instead of switching on a family;
// a new family is a record in its own file plus its line in table.cpp.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinylm/checkpoints/sniff.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/tokenizers/bpe.h"
#include "tinylm/train/family.h"

namespace tinylm::families {

// The loading flags generate, serve and perplexity share (--config, --tokenizer, --dtype,
// --activations, --cache-type); empty: the model's own, else the family's default.
struct LoadOptions {
  std::string config, tokenizer, dtype, cache_type;
  std::string activations = "f32";
  std::string device = "cpu";  // cpu | gpu | gpu:N (kernels/vulkan/devices.h's parse_device)
  int sequences = 1;           // decoded at once (serve's slots): a GPU's caches, reserved
  int logit_rows = 1;          // rows of logits a forward returns at most (perplexity: a window)
};

// A model loaded for decoding: the decode interface over weights it owns.
struct DecodeModel {
  std::shared_ptr<void> model;  // the family's model, which `backend` reads (declared first:
                                // it outlives the backend)
  std::unique_ptr<generate::DecodeBackend> backend;
  std::string loaded;  // for stderr: "loaded X in 12 ms: 1.2 MB of f32 weights, 2 threads"
};

// The DecodeModel of a family's model: it owns `model` and decodes through backend(*model).
template <class Model, class Backend>
DecodeModel decode_model(std::shared_ptr<Model> model, Backend backend, std::string loaded) {
  DecodeModel m;
  m.backend = backend(*model);
  m.model = std::move(model);
  m.loaded = std::move(loaded);
  return m;
}

struct Family {
  std::string_view name;   // as --arch spells it and run.json records it: "gpt2"
  std::string_view title;  // in messages: "GPT-2", "EvermindLM"
  // What a command that takes it says it expected: "EvermindLM (an .evl checkpoint; --arch
  // evermind)".
  std::string_view expected;
  // Its words for `file` ("a GPT-2 model directory") when the file is one of this family's,
  // from what checkpoints::sniff read; nullptr when it is not.
  const char* (*recognise)(const checkpoints::Sniffed& file) = nullptr;

  // Decoding (generate, serve); both null for a family they do not run.
  // --tokenizer when given, else the model's own (`model` as detected: its format is not read
  // again), else the family's default.
  BpeTokenizer (*load_tokenizer)(const std::string& explicit_path,
                                 const checkpoints::Sniffed& model) = nullptr;
  DecodeModel (*load_decoder)(const checkpoints::Sniffed& file,
                              const LoadOptions& options) = nullptr;
  bool f32_only = false;  // --dtype, --activations and --cache-type other than f32 are refused
  bool gpu = false;       // it decodes on a GPU too (--device gpu)
  bool prompt_allows_special = false;  // its prompts may hold <|endoftext|> (its training did)
  // Sampling when --temperature is not given (top_k: nor --top-k); 0, 0: greedy. EvermindLM
  // samples: greedy decoding of a small model repeats itself ("have have have").
  double temperature = 0.0;
  int top_k = 0;
  // Positions per served request when the model's sequences have no end of their own
  // (EvermindLM's conv history): generate then makes at most generate::kMaxNewTokens. 0: the
  // model has an end (GPT-2's n_positions).
  int context_without_end = 0;
  // Its texts are documents that start after the end-of-text token (microgpt's BOS, which also
  // ends them): a prompt starts with that token (an empty prompt is that token alone), and
  // perplexity scores a text's lines as documents, each after one.
  bool documents_start_with_eot = false;

  bool perplexity = false;  // `tinylm perplexity` scores it (generate/perplexity.h)
  bool convert = false;     // `tinylm convert` reads and writes its files

  // How it trains (train/family.h); `training.run` is null for a family that does not train.
  train::TrainFamily training{};
};

// A tokenizer named by --tokenizer: a tokenizer.json, or a directory with one (or with
// vocab.json + merges.txt).
BpeTokenizer tokenizer_from_path(const std::string& path);

// The records, in the order commands list them.
const std::vector<const Family*>& all();
// The records with a capability: families::those(decodes).
std::vector<const Family*> those(bool (*accepts)(const Family&));
inline bool decodes(const Family& f) { return f.load_decoder != nullptr; }
inline bool scores_perplexity(const Family& f) { return f.perplexity; }
inline bool converts(const Family& f) { return f.convert; }
inline bool trains(const Family& f) { return f.training.run != nullptr; }

// The families `tinylm train` takes, under their names: what train/ is given (it knows none).
const train::TrainFamilies& trainable();

// The record --arch `name` names; nullptr for none.
const Family* by_name(std::string_view name);
// The names of `families`, for --arch's accepted values and its help: {"gpt2", "evermind"}.
std::vector<std::string> names(const std::vector<const Family*>& families);
// "gpt2 or evermind".
std::string names_text(const std::vector<const Family*>& families);

// What a model path is: checkpoints::sniff's reading and the record that claims it (nullptr:
// none; `what` then says what the file is).
struct Detected : checkpoints::Sniffed {
  const Family* family = nullptr;
  bool foreign = false;  // no family, and the file names its own (a GGUF's architecture)
};
Detected detect(const std::string& path);

}  // namespace tinylm::families
