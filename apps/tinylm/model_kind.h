#pragma once
// The --model of a command: its flags (--model, --config, --tokenizer, --dtype, --activations,
// --cache-type, --device, --threads), and the file as the family table reads it, checked against
// the families the command takes: commands need no --arch where the file says, and a wrong kind is
// one line: "X: this is an EvermindLM checkpoint (EVL0); perplexity expects GPT-2 ...".
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/families/family.h"

namespace tinylm::cli {

using DetectedModel = families::Detected;

// What a --model names to fetch from the Hugging Face Hub: hf:ORG/NAME[@REVISION].
inline constexpr const char* kHubPrefix = "hf:";

// `path` itself, or for hf:ORG/NAME[@REV] the cached snapshot's model (a directory or a .gguf),
// downloaded first when missing (its progress on stderr). A malformed repository is a UsageError.
std::string local_model_path(const std::string& path);

// The model `path` for a command that takes the families in `accepted`: --arch when given (the
// file must agree), else what the file says. hf:ORG/NAME[@REV] is the cached snapshot, downloaded
// first when missing (its progress on stderr). Throws a one-line error naming what the file is
// and what the command expected.
DetectedModel resolve_model(const std::string& command, const std::string& path,
                            const std::string& arch,
                            const std::vector<const families::Family*>& accepted);

// --arch ARCH, one of the `accepted` families' names ("gpt2 or evermind (default: what the
// --model file is)").
void add_arch_option(CLI::App* cmd, std::string& arch,
                     const std::vector<const families::Family*>& accepted);

// The flags that load a model for generate, serve and perplexity.
struct ModelFlags {
  std::string model;
  families::LoadOptions load;  // load.dtype empty: f32, or a quantized GGUF's own
  int threads = 0;
  void add_to(CLI::App* cmd);
};

// Refuses --device, --dtype, --activations and --cache-type that `file`'s family does not run
// with, in the command's words: "--dtype bf16: EvermindLM generates in f32" (`verb`:
// "generates"), "--device gpu: EvermindLM generates on the CPU only"; a GPU takes f32, f16 or
// bf16 weights, f32 activations and no --cache-type.
void check_load_flags(const ModelFlags& flags, const DetectedModel& file, std::string_view verb);

// The tokenizer of `file`'s family: --tokenizer, else the model's own, else the family's.
BpeTokenizer load_model_tokenizer(const ModelFlags& flags, const DetectedModel& file);

// Refuses a tokenizer with more ids than the model's vocabulary of `model_vocab`, whose ids past
// it the model has no row for, in one line naming both sizes; fewer is fine (a head padded to a
// round size, as GPT-2's of 50257 tokens in a 50304-row head).
void check_tokenizer_fits(const BpeTokenizer& tok, int64_t model_vocab, const ModelFlags& flags,
                          const DetectedModel& file);

// The tokenizer's <|endoftext|> id (microgpt's BOS), or an Error naming `model`'s tokenizer.
int eot_of(const BpeTokenizer& tok, const std::string& model);

// The ids of a text to score: the tokenizer's, or for a family whose documents start after
// end-of-text (microgpt), each non-empty line as a document after that token, and one at the
// end (what ends the last document), as it trains.
std::vector<int> encode_text(const families::Family& family, const BpeTokenizer& tok,
                             std::string_view text, const std::string& model);

// `file` loaded for decoding with --threads; prints the load line to stderr.
families::DecodeModel load_decoder(const ModelFlags& flags, const DetectedModel& file);

}  // namespace tinylm::cli
