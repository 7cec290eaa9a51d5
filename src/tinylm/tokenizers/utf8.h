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

// Python's str.isspace() for a code point.
bool is_python_space(char32_t c);

}  // namespace tinylm
