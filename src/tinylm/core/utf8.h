#pragma once
#include <string>
#include <string_view>

namespace tinylm {

// Appends the UTF-8 encoding of code point c.
void append_utf8(std::string& out, char32_t c);
std::string to_utf8(std::u32string_view s);

// Decodes strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF). On invalid input returns
// false and sets *error_offset to the byte offset of the bad sequence.
bool decode_utf8(std::string_view in, std::u32string& out, size_t* error_offset);

// Validates strict UTF-8 without decoding it (same rules and error offset as decode_utf8).
bool is_valid_utf8(std::string_view in, size_t* error_offset);

// Whether byte c continues a UTF-8 sequence (10xxxxxx) rather than starting one.
inline bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The code points of s: its bytes that start a sequence (a part of one counts as one at most).
size_t code_points(std::string_view s);

// The code point starting at byte i of valid UTF-8, and its length in bytes.
char32_t utf8_at(std::string_view s, size_t i, int* len);

// Python's str.isspace() for a code point.
bool is_python_space(char32_t c);

}  // namespace tinylm
