#include "tinylm/tokenizers/char_tokenizer.h"

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"

namespace tinylm {

namespace {
std::u32string decode_or_throw(std::string_view s, std::string_view what) {
  std::u32string out;
  size_t bad = 0;
  check(decode_utf8(s, out, &bad), what, ": invalid UTF-8 at byte ", bad);
  return out;
}
}  // namespace

CharTokenizer CharTokenizer::from_documents(std::span<const std::string_view> docs) {
  CharTokenizer t;
  bool ascii[128] = {};
  for (const std::string_view d : docs) {
    size_t bad = 0;
    check(is_valid_utf8(d, &bad), "document: invalid UTF-8 at byte ", bad);
    for (size_t i = 0; i < d.size();) {
      int len = 0;
      const char32_t c = utf8_at(d, i, &len);
      i += len;
      if (c < 128) {
        if (ascii[c]) continue;
        ascii[c] = true;
      }
      t.chars_ += c;
    }
  }
  std::sort(t.chars_.begin(), t.chars_.end());
  t.chars_.erase(std::unique(t.chars_.begin(), t.chars_.end()), t.chars_.end());
  return t;
}

CharTokenizer CharTokenizer::from_chars(std::string_view chars_utf8) {
  CharTokenizer t;
  t.chars_ = decode_or_throw(chars_utf8, "character set");
  std::sort(t.chars_.begin(), t.chars_.end());
  t.chars_.erase(std::unique(t.chars_.begin(), t.chars_.end()), t.chars_.end());
  return t;
}

std::string CharTokenizer::chars_utf8() const { return to_utf8(chars_); }

std::vector<int> CharTokenizer::encode_document(std::string_view doc) const {
  std::vector<int> ids{bos()};
  for (char32_t c : decode_or_throw(doc, "document")) {
    const auto it = std::lower_bound(chars_.begin(), chars_.end(), c);
    if (it == chars_.end() || *it != c) {
      std::string ch;
      append_utf8(ch, c);
      fail("character '", ch, "' (U+", std::hex, static_cast<uint32_t>(c),
           ") is not in the vocabulary");
    }
    ids.push_back(static_cast<int>(it - chars_.begin()));
  }
  ids.push_back(bos());
  return ids;
}

std::string CharTokenizer::decode(std::span<const int> ids) const {
  std::string out;
  for (int id : ids) {
    check(id >= 0 && id <= bos(), "token id ", id, " outside the vocabulary");
    if (id != bos()) append_utf8(out, chars_[id]);
  }
  return out;
}

}  // namespace tinylm
