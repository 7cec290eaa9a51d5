#pragma once
// A training run's vocabulary, RUN/tokenizer.json, by --tokenizer:
//   char       the data's characters (nanoGPT's shakespeare_char);
//   byte       the 256 bytes and <|endoftext|>;
//   bpe:N      a byte-level BPE of N tokens trained on the data;
//   (empty)    the same with --vocab-size tokens (EvermindLM's default);
//   FILE, DIR  a tokenizer.json, or a directory with one or with GPT-2's vocabulary files.
// Written on a fresh run (and on a resumed one that predates it), by the first process; read
// back by the others, and on resume. Each checkpoint keeps a copy beside its weights, where
// generate, perplexity, serve and convert look for it.
#include <string>

#include "tinylm/tokenizers/bpe.h"
#include "tinylm/train/run_session.h"
#include "tinylm/train/token_file.h"

namespace tinylm::train {

// The kinds made from the data; a path is none of them.
enum class MadeVocab : uint8_t { none, chars, bytes, bpe };
struct TokenizerChoice {
  MadeVocab made = MadeVocab::none;
  int bpe_tokens = 0;  // bpe:N
};
// --tokenizer's value; "bpe:N" with N not in [257, 2^24] is an Error naming the flag.
TokenizerChoice parse_tokenizer_choice(const std::string& value);

struct RunTokenizer {
  BpeTokenizer tokenizer;
  std::string path;            // RUN/tokenizer.json
  TokenizerIdentity identity;  // for tokens.bin (a hash of the file)
};

RunTokenizer run_tokenizer(const RunConfig& c, const RunDir& dir, const RunRequest& request,
                           bool resume);

// A token-trained family's text: the vocabulary (run_tokenizer) and the text tokenized with it
// into RUN/tokens.bin (TextData).
class RunText {
 public:
  RunText(const RunConfig& c, const RunDir& dir, const RunRequest& request, bool resume);
  RunText(const RunText&) = delete;
  RunText& operator=(const RunText&) = delete;

  const BpeTokenizer& tokenizer() const { return vocab_.tokenizer; }
  // RUN/tokenizer.json copied to `to`: beside a checkpoint's weights, where the model's
  // loaders look for it.
  void save_tokenizer(const std::string& to) const;
  StepData& data() { return text_.data; }
  // A model with fewer token ids than the vocabulary is an Error naming the tokenizer.
  void check_model_vocab(int64_t model_vocab) const;
  // "N training and M validation tokens" (" (tokens.bin reused)"), for the run's first line.
  std::string token_counts() const;

 private:
  RunTokenizer vocab_;
  TextData text_;
};

}  // namespace tinylm::train
