// The GPT-2 pre-tokenizer and the Unicode classes behind it. Every expected split below was
// worked out by hand from the semantics of the JavaScript regex
//   /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu
// (ordered alternation, greedy runs, matching resumes where the last match ended).
#include "tinylm/tokenizers/pretokenize.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tinylm/tokenizers/unicode_classes.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (const ByteRange& r : pretokenize(text)) out.emplace_back(text.substr(r.offset, r.length));
  return out;
}

using V = std::vector<std::string>;

struct Case {
  const char* text;
  V want;
};

void expect_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(pieces(c.text), c.want) << "text: \"" << c.text << "\"";
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer

TEST(Pretokenize, WordsTakeTheSpaceBeforeThem) {
  expect_cases({
      {"Hello world", V{"Hello", " world"}},
      {"Hello, world!", V{"Hello", ",", " world", "!"}},
      {"a b c", V{"a", " b", " c"}},
      {"", V{}},
  });
}

TEST(Pretokenize, ContractionsAreCaseSensitiveAsciiApostropheOnly) {
  expect_cases({
      {"I'm", V{"I", "'m"}},
      {"don't", V{"don", "'t"}},
      {"we're they've you'll he'd it's",
       V{"we", "'re", " they", "'ve", " you", "'ll", " he", "'d", " it", "'s"}},
      // Upper case: the apostrophe is punctuation, the letter a word.
      {"IT'S", V{"IT", "'", "S"}},
      {"I'M", V{"I", "'", "M"}},
      // The typographic apostrophe U+2019 is punctuation, never a contraction.
      {"don\u2019t", V{"don", "\u2019", "t"}},
      // Contractions only where a match starts; after them matching resumes.
      {"'s'd", V{"'s", "'d"}},
      {"'ll've", V{"'ll", "'ve"}},
      {"''s", V{"''", "s"}},  // the punctuation run takes both apostrophes
      {"'l", V{"'", "l"}},
      {"'r", V{"'", "r"}},
      {"'", V{"'"}},
      {"its'", V{"its", "'"}},
      {" 's", V{" '", "s"}},  // a space before: " ?[^\s\p{L}\p{N}]+" wins
      {"'sa", V{"'s", "a"}},
      {"'st", V{"'s", "t"}},
      {"?'s", V{"?'", "s"}},
  });
}

TEST(Pretokenize, NumbersLettersAndPunctuationAreSeparateRuns) {
  expect_cases({
      {"123abc", V{"123", "abc"}},
      {"abc123", V{"abc", "123"}},
      {"$100.50", V{"$", "100", ".", "50"}},
      {" 42", V{" 42"}},
      {"a...b", V{"a", "...", "b"}},
      {"a ...b", V{"a", " ...", "b"}},
      {"x=1+2", V{"x", "=", "1", "+", "2"}},
  });
}

TEST(Pretokenize, WhitespaceGivesItsLastCharacterToTheNextWord) {
  expect_cases({
      {"  hello", V{" ", " hello"}},
      {"a   b", V{"a", "  ", " b"}},
      {"  42", V{" ", " 42"}},
      {"a  \n b", V{"a", "  \n", " b"}},
      {"a \n b", V{"a", " \n", " b"}},
      {"a\nb", V{"a", "\n", "b"}},
      {"a\r\nb", V{"a", "\r", "\n", "b"}},
      {"\n\nx", V{"\n", "\n", "x"}},
      {"Hello\n\nWorld", V{"Hello", "\n", "\n", "World"}},
      {"a\tb", V{"a", "\t", "b"}},
      {"a \tb", V{"a", " ", "\t", "b"}},  // the tab alone before b: "\s+" of one character
  });
}

TEST(Pretokenize, WhitespaceAtTheEndIsOnePiece) {
  expect_cases({
      {"  ", V{"  "}},
      {" ", V{" "}},
      {"\n\n", V{"\n\n"}},
      {"x\n\n", V{"x", "\n\n"}},
      {"hello ", V{"hello", " "}},
      {"hello  ", V{"hello", "  "}},
      {"a \t\n ", V{"a", " \t\n "}},
  });
}

TEST(Pretokenize, JavaScriptWhitespace) {
  expect_cases({
      // U+00A0 and U+3000 are \s; only U+0020 joins the next word.
      {"a\u00A0b", V{"a", "\u00A0", "b"}},
      {"a \u00A0b", V{"a", " ", "\u00A0", "b"}},
      {"x\u3000\u3000y", V{"x", "\u3000", "\u3000", "y"}},
      {"x\u2028y", V{"x", "\u2028", "y"}},
      // U+FEFF is \s in JavaScript (though not in Python).
      {"a\uFEFFb", V{"a", "\uFEFF", "b"}},
      {"a \uFEFF", V{"a", " \uFEFF"}},
      // U+0085 (NEL) is not \s in JavaScript: it is punctuation-like "other".
      {"a\u0085b", V{"a", "\u0085", "b"}},
      {"a \u0085b", V{"a", " \u0085", "b"}},
      // U+200B (zero width space) is not \s either (category Cf).
      {"a\u200Bb", V{"a", "\u200B", "b"}},
  });
}

TEST(Pretokenize, UnicodeLettersNumbersAndMarks) {
  expect_cases({
      {"na\u00EFve caf\u00E9", V{"na\u00EFve", " caf\u00E9"}},
      {"\u65E5\u672C\u8A9E \u30C6\u30AD\u30B9\u30C8\u30FC",  // 日本語 テキストー (ー is Lm)
       V{"\u65E5\u672C\u8A9E", " \u30C6\u30AD\u30B9\u30C8\u30FC"}},
      // Ⅻ (Nl), ² and ½ (No): one number run.
      {"\u216B\u00B2\u00BD", V{"\u216B\u00B2\u00BD"}},
      {"x\u0663", V{"x", "\u0663"}},  // ARABIC-INDIC DIGIT THREE (Nd)
      // A combining accent (Mn) is neither letter nor number.
      {"e\u0301", V{"e", "\u0301"}},
      {" \u0301x", V{" \u0301", "x"}},
      // Emoji (So), a skin tone modifier (Sk) and '!' are one punctuation run.
      {"hi \U0001F44B\U0001F3FD!", V{"hi", " \U0001F44B\U0001F3FD!"}},
      {"\U0001D400\U0001D401", V{"\U0001D400\U0001D401"}},  // MATHEMATICAL BOLD A, B (Lu)
      {"a\uFFFDb", V{"a", "\uFFFD", "b"}},
  });
}

TEST(Pretokenize, PiecesTileTheText) {
  const std::string text =
      "It's 3:45 p.m.\n\n  The caf\u00E9 \u2014 \"na\u00EFve\" \u65E5\u672C 12\u00BD% \t\r\n"
      "don't STOP'S \U0001F600\U0001F600 x\u3000 y  \n";
  size_t pos = 0;
  for (const ByteRange& r : pretokenize(text)) {
    EXPECT_EQ(r.offset, pos);
    EXPECT_GT(r.length, 0u);
    EXPECT_EQ(pretoken_end(text, r.offset), r.offset + r.length);
    pos += r.length;
  }
  EXPECT_EQ(pos, text.size());
  std::vector<std::string> seen;
  for_each_pretoken(text, [&](std::string_view p) { seen.emplace_back(p); });
  EXPECT_EQ(seen, pieces(text));
}

// One huge run of one character is one piece (or two, for whitespace before a word): the
// scanner must stay linear on them (a quadratic one takes about 10^12 steps here).
TEST(Pretokenize, HugeRunsAreLinear) {
  const size_t n = size_t{1} << 20;
  struct Run {
    std::string text;
    std::vector<size_t> lengths;
  };
  const std::vector<Run> runs = {
      {std::string(n, 'a'), {n}},
      {std::string(n, '7'), {n}},
      {std::string(n, '!'), {n}},
      {std::string(n, ' '), {n}},
      {std::string(n, '\n'), {n}},
      {std::string(n, ' ').append("x"), {n - 1, 2}},
      {std::string(n, '\n').append("x"), {n - 1, 1, 1}},
      {std::string(n, '\'').append("s"), {n, 1}},  // no contraction inside a punctuation run
  };
  for (const Run& run : runs) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<ByteRange> got = pretokenize(run.text);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<size_t> lengths;
    for (const ByteRange& r : got) lengths.push_back(r.length);
    EXPECT_EQ(lengths, run.lengths) << "run of '" << run.text[0] << "'";
    EXPECT_LT(s, 1.0) << "run of '" << run.text[0] << "' took " << s << " s";
  }
  // Many small pieces: 2 MB of alternating " a".
  std::string alt;
  for (size_t i = 0; i < n; ++i) alt += " a";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pretokenize(alt).size(), n);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0);
  std::printf("[ info     ] pre-tokenizer: 2 MB of \" a\" in %.1f ms\n", s * 1e3);
}

// ---------------------------------------------------------------------------------------------
// Unicode classes (expected classes from the Unicode Character Database's general categories)

TEST(UnicodeClasses, KnownCodePoints) {
  struct Known {
    char32_t c;
    CharClass cls;
  };
  const std::vector<Known> known = {
      {U'A', CharClass::kLetter},    {U'z', CharClass::kLetter},
      {U'0', CharClass::kNumber},    {U'9', CharClass::kNumber},
      {U' ', CharClass::kSpace},     {U'\t', CharClass::kSpace},
      {U'_', CharClass::kOther},     {U'\'', CharClass::kOther},
      {0x00, CharClass::kOther},     {0x7F, CharClass::kOther},
      {0x1C, CharClass::kOther},  // a Python space, not a JavaScript one
      {0x85, CharClass::kOther},     {0xA0, CharClass::kSpace},
      {0xAA, CharClass::kLetter},                                  // ª Lo
      {0xB2, CharClass::kNumber},                                  // ² No
      {0xB5, CharClass::kLetter},                                  // µ Ll
      {0xBA, CharClass::kLetter},                                  // º Lo
      {0xD7, CharClass::kOther},                                   // × Sm
      {0xE9, CharClass::kLetter},                                  // é Ll
      {0x2B0, CharClass::kLetter},                                 // ʰ Lm
      {0x301, CharClass::kOther},                                  // combining acute Mn
      {0x3A9, CharClass::kLetter},                                 // Ω Lu
      {0x660, CharClass::kNumber},                                 // ٠ Nd
      {0x1680, CharClass::kSpace},   {0x180E, CharClass::kOther},  // Cf since Unicode 6.3
      {0x2000, CharClass::kSpace},   {0x200A, CharClass::kSpace},
      {0x200B, CharClass::kOther},   {0x2019, CharClass::kOther},
      {0x2028, CharClass::kSpace},   {0x2029, CharClass::kSpace},
      {0x202F, CharClass::kSpace},   {0x205F, CharClass::kSpace},
      {0x216B, CharClass::kNumber},                                 // Ⅻ Nl
      {0x3000, CharClass::kSpace},   {0x3007, CharClass::kNumber},  // 〇 Nl
      {0x4E2D, CharClass::kLetter},                                 // 中 Lo
      {0xFEFF, CharClass::kSpace},   {0xFFFD, CharClass::kOther},
      {0x1D400, CharClass::kLetter},  // 𝐀 Lu
      {0x1F600, CharClass::kOther},   // 😀 So
      {0x20000, CharClass::kLetter},  // CJK extension B Lo
      {0xE000, CharClass::kOther},    // private use
      {0x10FFFF, CharClass::kOther},
  };
  for (const Known& k : known) {
    EXPECT_EQ(char_class(k.c), k.cls) << "U+" << std::hex << static_cast<uint32_t>(k.c);
    EXPECT_EQ(is_unicode_letter(k.c), k.cls == CharClass::kLetter);
    EXPECT_EQ(is_unicode_number(k.c), k.cls == CharClass::kNumber);
    EXPECT_EQ(is_js_space(k.c), k.cls == CharClass::kSpace);
  }
}

TEST(UnicodeClasses, JavaScriptWhitespaceIsExactlyTheSpecifiedList) {
  std::vector<char32_t> want;
  for (char32_t c = 0x09; c <= 0x0D; ++c) want.push_back(c);
  for (char32_t c : {0x20, 0xA0, 0x1680}) want.push_back(c);
  for (char32_t c = 0x2000; c <= 0x200A; ++c) want.push_back(c);
  for (char32_t c : {0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF}) want.push_back(c);
  std::vector<char32_t> got;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (is_js_space(c)) got.push_back(c);
  }
  EXPECT_EQ(got, want);
}

TEST(UnicodeClasses, ClassesAreDisjointAndVersioned) {
  size_t letters = 0, numbers = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    const int n = is_unicode_letter(c) + is_unicode_number(c) + is_js_space(c);
    ASSERT_LE(n, 1) << "U+" << std::hex << static_cast<uint32_t>(c);
    letters += is_unicode_letter(c);
    numbers += is_unicode_number(c);
  }
  // Unicode 14.0 has 131,756 letters (L*) and 1,791 numbers (N*), as counted by
  //   /usr/bin/python3 -c "import unicodedata as u; print(sum(u.category(chr(c))[0] == 'L'
  //                        for c in range(0x110000)))"   (and 'N'; Python 3.11.2)
  EXPECT_STREQ(unicode_tables_version(), "14.0.0");
  EXPECT_EQ(letters, 131756u);
  EXPECT_EQ(numbers, 1791u);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
