#pragma once
// The code point classes of the GPT-2 pre-tokenizer regex (a JavaScript regex with the `u`
// flag). The tables behind them are generated from Python's unicodedata by
// tools/gen_unicode_tables.py; unicode_tables_version() says which Unicode version.
#include <cstdint>

namespace tinylm {

enum class CharClass : uint8_t { kOther, kLetter, kNumber, kSpace };

// \p{L}: general category Lu, Ll, Lt, Lm or Lo.
bool is_unicode_letter(char32_t c);
// \p{N}: general category Nd, Nl or No.
bool is_unicode_number(char32_t c);
// JavaScript's \s: U+0009-U+000D, U+0020, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029,
// U+202F, U+205F, U+3000, U+FEFF (WhiteSpace and LineTerminator of ECMA-262).
bool is_js_space(char32_t c);
// The one class of c (the three sets above are disjoint; kOther is everything else).
CharClass char_class(char32_t c);

// The Unicode version of the tables, e.g. "14.0.0".
const char* unicode_tables_version();

}  // namespace tinylm
