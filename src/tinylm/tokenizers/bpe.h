#pragma once
// GPT-2 byte-level BPE: the tokenizer of GPT-2 and of the models that reuse its vocabulary.
//
// Encoding: invalid UTF-8 is replaced (sanitize_utf8), special tokens are split off when the
// caller allows them, the rest is cut into pieces by the GPT-2 pre-tokenizer (pretokenize.h),
// and each piece's bytes, written as characters of the byte-level alphabet (one character
// per byte), are merged pairwise: repeatedly the adjacent pair of lowest merge rank, all its
// non-overlapping occurrences left to right, until no adjacent pair has a rank.
// Decoding maps the tokens' characters back to bytes.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm {

namespace bpe_detail {
struct Model;
struct Cache;
}  // namespace bpe_detail

// The byte-level alphabet: bytes 33-126, 161-172 and 174-255 are the code points of the
// same value; the other 68 bytes, in increasing order, are U+0100, U+0101, ... (space is
// U+0120 'Ġ', newline U+010A 'Ċ').
char32_t byte_to_unicode(uint8_t b);
// The byte of an alphabet character, or -1 when c is not one of the 256.
int unicode_to_byte(char32_t c);

// Bytes to valid UTF-8 the way the WHATWG decoder (Node's Buffer.toString('utf8'),
// TextDecoder) does it: each maximal invalid subpart becomes one U+FFFD. For example
// F0 9F 98 'a' -> U+FFFD 'a'; ED A0 80 -> three U+FFFD; C0 80 -> two; a lone 80 -> one.
// Valid UTF-8 comes back unchanged.
std::string sanitize_utf8(std::string_view bytes);

class BpeTokenizer {
 public:
  // Hugging Face tokenizer.json with a "BPE" model: model.vocab (token -> id), model.merges
  // as "a b" strings or ["a", "b"] pairs, added_tokens (ids must agree with the vocab).
  // Settings tinylm cannot honour (a normalizer, byte fallback, a prefix space, ...) are
  // refused. Every error is an Error naming the file.
  static BpeTokenizer from_tokenizer_json(const std::string& path);
  // The same from the file's bytes; `name` stands for the file in error messages.
  static BpeTokenizer from_tokenizer_json_text(std::string_view json, const std::string& name);

  // vocab.json + merges.txt, or encoder.json + vocab.bpe (the same formats): a JSON object
  // token -> id, and one merge "a b" per line (rank = line order) after an optional
  // "#version" first line; blank lines at the end are ignored.
  static BpeTokenizer from_vocab_and_merges(const std::string& vocab_path,
                                            const std::string& merges_path);
  static BpeTokenizer from_vocab_and_merges_text(std::string_view vocab_json,
                                                 std::string_view merges_text,
                                                 const std::string& vocab_name,
                                                 const std::string& merges_name);

  // A vocabulary given as lists (GGUF's tokenizer.ggml.tokens and .merges): token i has id i,
  // merges are "a b" strings in rank order, special_ids the tokens to treat as special (as an
  // added token marked special). Duplicate tokens are an Error naming `name`.
  static BpeTokenizer from_tokens(std::span<const std::string> tokens,
                                  std::span<const std::string> merges,
                                  std::span<const int> special_ids, const std::string& name);

  // The first of DIR/tokenizer.json, DIR/vocab.json + DIR/merges.txt, DIR/encoder.json +
  // DIR/vocab.bpe that exists.
  static BpeTokenizer from_directory(const std::string& dir);

  BpeTokenizer(const BpeTokenizer& other);  // shares the vocabulary, not the cache
  BpeTokenizer& operator=(const BpeTokenizer& other);
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // Token ids of text (any bytes; invalid UTF-8 is replaced as by sanitize_utf8). With
  // allow_special, the special tokens (<|endoftext|> and added tokens marked special) are
  // recognized in the text; without it they are ordinary text. Thread-safe. Throws Error if
  // the text needs a byte whose token the vocabulary lacks.
  std::vector<int> encode(std::string_view text, bool allow_special = false) const;

  // The same ids, reporting how far the encoder is: progress(bytes_done, bytes_total) each
  // time the pre-tokenized pieces encoded so far pass another `every` bytes of the text, and
  // once at the end (bytes_done == bytes_total). The bytes are the text's after the UTF-8
  // repair. The text is encoded whole, as by encode: progress never moves a token boundary.
  using EncodeProgress = std::function<void(size_t bytes_done, size_t bytes_total)>;
  std::vector<int> encode(std::string_view text, bool allow_special, const EncodeProgress& progress,
                          size_t every = size_t{1} << 20) const;

  // The bytes of the tokens, concatenated: not necessarily valid UTF-8 when the ids split a
  // character (see StreamDecoder). Throws Error on an id outside the vocabulary.
  std::string decode(std::span<const int> ids) const;

  int vocab_size() const;
  int num_merges() const;
  // Merge `rank` as "a b" (the two tokens as the vocabulary writes them).
  std::string merge(int rank) const;
  // The id of <|endoftext|>, if the vocabulary has it.
  std::optional<int> eot_id() const;
  // A token as the vocabulary writes it (byte-level characters, e.g. "Ġthe").
  const std::string& token(int id) const;
  // The bytes a token decodes to (e.g. " the"): its characters through the byte-level
  // alphabet, or, when one of them is outside it (an added token with a space, say), the
  // token as written, as Hugging Face's ByteLevel decoder does.
  std::string_view token_bytes(int id) const;
  // The id of a token written as the vocabulary writes it.
  std::optional<int> token_id(std::string_view token) const;
  // The special token ids, in id order.
  std::vector<int> special_ids() const;

  // Writes a Hugging Face tokenizer.json atomically: the vocabulary in id order, the merges as
  // "a b" strings (["a", "b"] pairs if a token has a space), the special tokens as
  // added_tokens, GPT-2's ByteLevel pre-tokenizer and decoder.
  void save_tokenizer_json(const std::string& path) const;

 private:
  explicit BpeTokenizer(std::shared_ptr<const bpe_detail::Model> model);

  std::shared_ptr<const bpe_detail::Model> model_;
  std::unique_ptr<bpe_detail::Cache> cache_;  // pre-token bytes -> ids
};

// Decodes a stream of ids as they come (e.g. while sampling) into printable text: bytes that
// may still become a UTF-8 character are held back until the next ids complete it.
class StreamDecoder {
 public:
  explicit StreamDecoder(const BpeTokenizer& tokenizer) : tokenizer_(&tokenizer) {}
  // The text that became complete with this id (valid UTF-8; invalid bytes are U+FFFD).
  std::string push(int id);
  // What is left, an incomplete trailing sequence replaced by U+FFFD; the decoder is then
  // empty again.
  std::string finish();

 private:
  const BpeTokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace tinylm
