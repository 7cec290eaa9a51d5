#include "tinylm/train/run_tokenizer.h"

#include <charconv>
#include <filesystem>

#include "tinylm/core/error.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/bpe_trainer.h"
#include "tinylm/tokenizers/char_and_byte_vocab.h"

namespace tinylm::train {

namespace fs = std::filesystem;

TokenizerChoice parse_tokenizer_choice(const std::string& value) {
  if (value == "char") return {MadeVocab::chars};
  if (value == "byte") return {MadeVocab::bytes};
  if (!value.starts_with("bpe:")) return {};
  int n = 0;
  const char* end = value.data() + value.size();
  const auto [at, ec] = std::from_chars(value.data() + 4, end, n);
  check(ec == std::errc() && at == end && n >= 257 && n <= (1 << 24), "--tokenizer ", value,
        ": bpe:N needs N tokens in [257, 16777216] (the 256 bytes and <|endoftext|> first)");
  return {MadeVocab::bpe, n};
}

namespace {

// The text of every data file, for the vocabularies made from it.
std::string all_text(const RunConfig& c) {
  std::string text;
  for (const std::string& f : data_files(c)) text += read_text_source(f);
  return text;
}

// Writes RUN/tokenizer.json from --tokenizer; says on the log what it made.
void write_tokenizer(const RunConfig& c, const std::string& path, std::FILE* log) {
  const TokenizerChoice choice = parse_tokenizer_choice(c.tokenizer);
  switch (choice.made) {
    case MadeVocab::chars:
    case MadeVocab::bytes: {
      const bool chars = choice.made == MadeVocab::chars;
      const BpeTokenizer tok = chars ? char_vocabulary(all_text(c)) : byte_vocabulary();
      tok.save_tokenizer_json(path);
      std::fprintf(log, "tokenizer: %d tokens, %s, saved to %s\n", tok.vocab_size(),
                   chars ? "the data's characters" : "the 256 bytes and <|endoftext|>",
                   path.c_str());
      return;
    }
    case MadeVocab::none:
      if (c.tokenizer.empty()) break;       // EvermindLM's default: a BPE of --vocab-size tokens
      if (fs::is_directory(c.tokenizer)) {  // GPT-2's files, or a tokenizer.json, in it
        BpeTokenizer::from_directory(c.tokenizer).save_tokenizer_json(path);
      } else {
        BpeTokenizer::from_tokenizer_json(c.tokenizer);  // validates before copying
        io::copy_file_atomic(c.tokenizer, path);
      }
      return;
    case MadeVocab::bpe:
      break;
  }
  const std::string text = all_text(c);
  BpeTrainConfig tc;
  tc.vocab_size =
      choice.made == MadeVocab::bpe ? choice.bpe_tokens : static_cast<int>(c.vocab_size);
  const BpeTrainResult trained = train_bpe(text, tc);
  trained.save_tokenizer_json(path);
  // A text with fewer pairs to merge than were asked for gives fewer tokens: said, since the
  // model's vocabulary (its embedding) is the tokenizer's size.
  const std::string fewer =
      trained.vocab_size() < tc.vocab_size
          ? " (of " + std::to_string(tc.vocab_size) + " asked: the text has no more pairs to merge)"
          : "";
  std::fprintf(log, "tokenizer: %d tokens trained on %zu bytes%s, saved to %s\n",
               trained.vocab_size(), text.size(), fewer.c_str(), path.c_str());
}

}  // namespace

RunTokenizer run_tokenizer(const RunConfig& c, const RunDir& dir, const RunRequest& request,
                           bool resume) {
  const std::string path = dir.root() + "/tokenizer.json";
  return root_first([&] {
    if (distributed::Comm::world().root() && (!resume || !fs::exists(path)))
      write_tokenizer(c, path, request.log);
    BpeTokenizer tok = BpeTokenizer::from_tokenizer_json(path);
    const std::string text = io::read_file(path);
    TokenizerIdentity identity{
        "bpe-json:" + std::to_string(io::crc32(std::as_bytes(std::span(text)))), tok.vocab_size(),
        tok.eot_id()};
    return RunTokenizer{std::move(tok), path, std::move(identity)};
  });
}

RunText::RunText(const RunConfig& c, const RunDir& dir, const RunRequest& request, bool resume)
    : vocab_(run_tokenizer(c, dir, request, resume)),
      text_(
          c, dir, vocab_.identity,
          [this](std::string_view t) { return vocab_.tokenizer.encode(t, true); }, request.log) {}

void RunText::save_tokenizer(const std::string& to) const { fs::copy_file(vocab_.path, to); }

void RunText::check_model_vocab(int64_t model_vocab) const {
  check(vocab_.tokenizer.vocab_size() <= model_vocab, vocab_.path, ": ",
        vocab_.tokenizer.vocab_size(), " tokens, more than the model's vocabulary of ",
        model_vocab);
}

std::string RunText::token_counts() const {
  return cat(text_.sampler.split().n_train, " training and ", text_.sampler.split().n_val,
             " validation tokens", text_.tokens.reused ? " (tokens.bin reused)" : "");
}

}  // namespace tinylm::train
