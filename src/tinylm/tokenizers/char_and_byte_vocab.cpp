#include "tinylm/tokenizers/char_and_byte_vocab.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"

namespace tinylm {

namespace {

// Bytes as the byte-level alphabet writes them (one character per byte).
std::string byte_level(std::string_view bytes) {
  std::string out;
  for (const char b : bytes) append_utf8(out, byte_to_unicode(static_cast<uint8_t>(b)));
  return out;
}

}  // namespace

BpeTokenizer byte_vocabulary() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_level(std::string(1, static_cast<char>(b))));
  tokens.emplace_back("<|endoftext|>");
  const int eot = 256;
  return BpeTokenizer::from_tokens(tokens, {}, std::span(&eot, 1), "byte vocabulary");
}

BpeTokenizer char_vocabulary(std::string_view text) {
  std::u32string chars;
  size_t bad = 0;
  check(decode_utf8(text, chars, &bad), "char vocabulary: invalid UTF-8 at byte ", bad);
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  check(!chars.empty(), "char vocabulary: the text has no characters");
  std::vector<std::string> tokens;
  for (const char32_t c : chars) tokens.push_back(byte_level(to_utf8(std::u32string(1, c))));
  // A character of k bytes: its first byte and the prefixes of 2..k-1 bytes are tokens, and a
  // merge (prefix, next byte) makes each longer prefix. Continuation bytes never start a
  // character, so no merge can join two characters.
  std::set<std::string> have(tokens.begin(), tokens.end());
  std::vector<std::string> merges;
  std::set<std::string> merged;
  for (const char32_t c : chars) {
    const std::string bytes = to_utf8(std::u32string(1, c));
    for (size_t k = 1; k < bytes.size(); ++k) {
      const std::string prefix = byte_level(bytes.substr(0, k));
      if (have.insert(prefix).second) tokens.push_back(prefix);
      const std::string merge = prefix + " " + byte_level(bytes.substr(k, 1));
      if (merged.insert(merge).second) merges.push_back(merge);
      const std::string next = byte_level(bytes.substr(k, 1));
      if (have.insert(next).second) tokens.push_back(next);
    }
  }
  return BpeTokenizer::from_tokens(tokens, merges, {}, "char vocabulary");
}

BpeTokenizer microgpt_vocabulary(std::string_view chars) {
  std::vector<std::string> tokens;
  for (const char c : chars) {
    const auto byte = static_cast<uint8_t>(c);
    check(byte < 0x80, "microgpt character set: character at byte ", tokens.size(),
          " is not ASCII (tinylm reads microgpt vocabularies of single-byte characters only)");
    tokens.push_back(byte_level(std::string(1, c)));
  }
  check(!tokens.empty(), "microgpt character set: empty");
  const int bos = static_cast<int>(tokens.size());
  tokens.emplace_back("<|endoftext|>");
  return BpeTokenizer::from_tokens(tokens, {}, std::span(&bos, 1), "microgpt character set");
}

}  // namespace tinylm
