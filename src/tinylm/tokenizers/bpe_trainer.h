#pragma once
// Trains a GPT-2-style byte-level BPE on a text corpus, for BpeTokenizer (bpe.h) to use.
//
// The rules, complete enough for an independent implementation to reproduce the merges
// (tools/bpe_train_reference.py is one):
//
//  1. Words. Invalid UTF-8 in the corpus is replaced as sanitize_utf8 does. The special
//     tokens are cut out of the text, leftmost occurrence first and the longest one there
//     (as BpeTokenizer::encode with allow_special does); they are not trained on. Each text
//     between them is split by the GPT-2 pre-tokenizer (pretokenize.h). Every piece is a
//     word, a sequence of byte symbols; equal pieces are one word with a count.
//  2. Count. The count of a pair of symbols (a, b) is the sum over the words of the word's
//     count times the number of positions where a is directly followed by b; overlapping
//     occurrences count separately ("aaa" holds (a, a) twice).
//  3. Choice. Each step merges the pair with the highest count. Among equal counts it takes
//     the pair whose symbols' bytes (bytes(a), bytes(b)) are smallest: bytes(a) compared first,
//     then bytes(b), each lexicographically as unsigned bytes (a proper prefix is smaller).
//     A pair is never chosen when its merged bytes are already a token's, or when they,
//     written in the byte-level alphabet, are the text of a special token (the vocabulary
//     could not hold both; the first has not been seen to happen, the second needs a special
//     token such as "Ġthe").
//  4. Merge. In every word, the occurrences of the pair are replaced left to right by the new
//     symbol, without overlap ("aaa" becomes "aa" "a").
//  5. Stop. When the vocabulary reaches vocab_size, or earlier when no pair is left to merge
//     (every word is one symbol, or only refused pairs remain): the result is then smaller
//     than asked for; BpeTrainResult::vocab_size() says how large.
//
// Ids: 0..255 are the bytes, in byte order; merge r (counting from 0) makes token 256 + r;
// the special tokens follow in the order given. Encoding a training word with the resulting
// tokenizer reproduces the symbols training left it with, because a merge only ever creates
// pairs of higher rank than itself.
//
// The trainer counts the words once, keeps the pair counts and, for each pair, the words that
// hold it, and takes the best pair from a heap with lazy deletion: a step touches only the
// words that hold the merged pair.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tinylm/tokenizers/bpe.h"

namespace tinylm {

struct BpeTrainConfig {
  // Tokens in all: the 256 bytes, the merges and the special tokens. At least
  // 256 + special_tokens.size().
  int vocab_size = 4096;
  // Non-empty, distinct, valid UTF-8, and none equal to the byte-level character of a single
  // byte (e.g. "a" or "Ġ"), which is already a token.
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
};

// A pre-tokenizer piece and how often it occurs.
struct BpeWordCount {
  std::string word;  // bytes
  int64_t count = 0;
  bool operator==(const BpeWordCount&) const = default;
};

struct BpeTrainResult {
  // By id: the bytes each token stands for (the 256 single bytes, then one per merge), then
  // the special tokens' text.
  std::vector<std::string> token_bytes;
  // By rank: the two token ids merge r joins into token 256 + r.
  std::vector<std::pair<int, int>> merges;
  // In id order, from 256 + merges.size().
  std::vector<std::string> special_tokens;

  int vocab_size() const { return static_cast<int>(token_bytes.size()); }

  // A Hugging Face tokenizer.json (BPE model, GPT-2's ByteLevel pre-tokenizer and decoder, the
  // special tokens as added_tokens marked special).
  std::string tokenizer_json() const;
  // The tokenizer: tokenizer_json() through BpeTokenizer::from_tokenizer_json_text, the loader
  // every tokenizer.json goes through. Throws Error when there are no merges (that loader
  // requires at least one).
  BpeTokenizer tokenizer() const;
  // tokenizer().save_tokenizer_json(path): atomic, loadable by BpeTokenizer::from_tokenizer_json.
  void save_tokenizer_json(const std::string& path) const;
};

// Step 1 alone: the words of `corpus` and their counts, in order of first occurrence.
// Throws Error on invalid special tokens.
std::vector<BpeWordCount> count_bpe_words(std::string_view corpus,
                                          std::span<const std::string> special_tokens);

// Steps 2-5 on words already counted (words must be distinct and non-empty, counts positive).
BpeTrainResult train_bpe_words(std::span<const BpeWordCount> words, const BpeTrainConfig& config);

// All of it. Throws Error (naming the option) when vocab_size < 256 + special tokens or a
// special token is invalid.
BpeTrainResult train_bpe(std::string_view corpus, const BpeTrainConfig& config);

}  // namespace tinylm
