#include "tinylm/tokenizers/pretokenize.h"

#include <array>

#include "tinylm/tokenizers/unicode_classes.h"

namespace tinylm {

namespace {

// The classes of the ASCII code points (the same as char_class gives: in ASCII, \p{L} is
// A-Z a-z, \p{N} is 0-9 and \s is U+0009-U+000D and U+0020).
constexpr std::array<CharClass, 128> kAscii = [] {
  std::array<CharClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
      t[c] = CharClass::kLetter;
    } else if (c >= '0' && c <= '9') {
      t[c] = CharClass::kNumber;
    } else if ((c >= 0x09 && c <= 0x0D) || c == ' ') {
      t[c] = CharClass::kSpace;
    } else {
      t[c] = CharClass::kOther;
    }
  }
  return t;
}();

// The class of the code point at byte i (valid UTF-8) and its length in bytes.
inline CharClass class_at(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *len = 1;
    return kAscii[b0];
  }
  const auto b = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F);
  };
  char32_t c;
  if (b0 < 0xE0) {
    *len = 2;
    c = (static_cast<char32_t>(b0 & 0x1F) << 6) | b(1);
  } else if (b0 < 0xF0) {
    *len = 3;
    c = (static_cast<char32_t>(b0 & 0x0F) << 12) | (b(1) << 6) | b(2);
  } else {
    *len = 4;
    c = (static_cast<char32_t>(b0 & 0x07) << 18) | (b(1) << 12) | (b(2) << 6) | b(3);
  }
  return char_class(c);
}

// The end of the run of code points of class k that starts at byte i.
size_t run_end(std::string_view s, size_t i, CharClass k) {
  size_t len = 0;
  while (i < s.size() && class_at(s, i, &len) == k) i += len;
  return i;
}

}  // namespace

size_t pretoken_end(std::string_view s, size_t pos) {
  const size_t n = s.size();
  const char c0 = s[pos];
  // 's|'t|'re|'ve|'m|'ll|'d: case-sensitive, the ASCII apostrophe only.
  if (c0 == '\'' && pos + 1 < n) {
    const char c1 = s[pos + 1];
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return pos + 2;
    if (pos + 2 < n) {
      const char c2 = s[pos + 2];
      if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        return pos + 3;
      }
    }
  }
  size_t len0 = 0;
  CharClass k = class_at(s, pos, &len0);
  size_t start = pos + len0;
  // ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`: a space (U+0020 only) followed by a non-space
  // joins the run of that code point's class. A space followed by a space (or nothing)
  // falls through to the whitespace rules.
  if (c0 == ' ' && start < n) {
    size_t len1 = 0;
    const CharClass k1 = class_at(s, start, &len1);
    if (k1 != CharClass::kSpace) {
      k = k1;
      start += len1;
    }
  }
  if (k != CharClass::kSpace) return run_end(s, start, k);
  // `\s+(?!\S)|\s+`: the whole whitespace run when it ends the text or is one code point
  // long; otherwise (a non-space follows) all of it but its last code point, which starts
  // the next piece (where a space joins the word after it).
  size_t last = pos;  // start of the run's last code point
  size_t end = start;
  size_t len = 0;
  while (end < n && class_at(s, end, &len) == CharClass::kSpace) {
    last = end;
    end += len;
  }
  return (end == n || last == pos) ? end : last;
}

std::vector<ByteRange> pretokenize(std::string_view text) {
  std::vector<ByteRange> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = pretoken_end(text, pos);
    out.push_back({pos, end - pos});
    pos = end;
  }
  return out;
}

}  // namespace tinylm
