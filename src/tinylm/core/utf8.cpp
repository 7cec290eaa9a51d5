#include "tinylm/core/utf8.h"

namespace tinylm {

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += !is_utf8_continuation(c);
  return n;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

namespace {
// Shared by decode_utf8 and is_valid_utf8: appends code points to out when it is non-null.
bool scan_utf8(std::string_view in, std::u32string* out, size_t* error_offset) {
  size_t i = 0;
  while (i < in.size()) {
    const auto b0 = static_cast<unsigned char>(in[i]);
    if (b0 < 0x80 && !out) {
      ++i;
      continue;
    }
    int len;
    char32_t c;
    if (b0 < 0x80) {
      len = 1;
      c = b0;
    } else if (b0 >= 0xC2 && b0 < 0xE0) {
      len = 2;
      c = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 < 0xF0) {
      len = 3;
      c = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 < 0xF5) {
      len = 4;
      c = b0 & 0x07;
    } else {
      if (error_offset) *error_offset = i;
      return false;
    }
    if (i + len > in.size()) {
      if (error_offset) *error_offset = i;
      return false;
    }
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(in[i + k]);
      if ((b & 0xC0) != 0x80) {
        if (error_offset) *error_offset = i;
        return false;
      }
      c = (c << 6) | (b & 0x3F);
    }
    const bool overlong = (len == 3 && c < 0x800) || (len == 4 && c < 0x10000);
    if (overlong || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) {
      if (error_offset) *error_offset = i;
      return false;
    }
    if (out) *out += c;
    i += len;
  }
  return true;
}
}  // namespace

bool decode_utf8(std::string_view in, std::u32string& out, size_t* error_offset) {
  out.clear();
  return scan_utf8(in, &out, error_offset);
}

bool is_valid_utf8(std::string_view in, size_t* error_offset) {
  return scan_utf8(in, nullptr, error_offset);
}

char32_t utf8_at(std::string_view s, size_t i, int* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const int n = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
  char32_t c = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (int k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *len = n;
  return c;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

}  // namespace tinylm
