#pragma once
// The GPT-2 pre-tokenizer: splits text into the pieces that byte-level BPE encodes one at a
// time. It has exactly the semantics of the JavaScript regex (with the `u` flag) that
// OpenAI's GPT-2 encoder and the npm package gpt-3-encoder use,
//
//   /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu
//
// matched repeatedly over the code points (the first alternative that matches wins at each
// position; the next match starts where the last one ended), written as a hand-made scanner
// that runs in linear time. Every code point belongs to exactly one piece, so the pieces
// tile the text.
#include <cstddef>
#include <string_view>
#include <vector>

namespace tinylm {

struct ByteRange {
  size_t offset = 0;
  size_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

// The end (byte offset) of the piece that starts at byte `pos` of `text`. Requires valid
// UTF-8 (see sanitize_utf8 in bpe.h) and pos < text.size() at a code point boundary.
size_t pretoken_end(std::string_view text, size_t pos);

// All pieces of `text` (valid UTF-8), in order.
std::vector<ByteRange> pretokenize(std::string_view text);

// Calls f(std::string_view piece) for each piece of `text` (valid UTF-8), in order.
template <class F>
void for_each_pretoken(std::string_view text, F&& f) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = pretoken_end(text, pos);
    f(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace tinylm
