// GPT-2 byte-level BPE: the byte alphabet, UTF-8 repair, the vocabulary loaders and their
// errors, encoding on small vocabularies whose merges are worked out by hand, the streaming
// decoder, special tokens, and (when data/gpt2/ holds the vocabulary) known GPT-2 ids and linear
// time on long runs. The encoding speed is bench/tokenizer_bench.cpp's.
#include "tinylm/tokenizers/bpe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using Ids = std::vector<int>;
using test::TempDir;
using test::write_text;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A vocabulary file: a JSON object token -> id, in the given order.
std::string vocab_json(const std::vector<std::pair<std::string, int>>& entries) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [token, id] : entries) j[token] = id;
  return j.dump();
}

// A merges file with the #version line GPT-2's vocab.bpe has.
std::string merges_txt(const std::vector<std::string>& merges) {
  std::string out = "#version: 0.2\n";
  for (const std::string& m : merges) out += m + "\n";
  return out;
}

// A tokenizer.json with merges as "a b" strings, or as ["a", "b"] pairs.
std::string tokenizer_json(const std::vector<std::pair<std::string, int>>& entries,
                           const std::vector<std::string>& merges, bool pairs,
                           const std::string& added_tokens = "[]") {
  nlohmann::ordered_json model = nlohmann::ordered_json::object();
  model["type"] = "BPE";
  model["vocab"] = nlohmann::ordered_json::parse(vocab_json(entries));
  model["merges"] = nlohmann::ordered_json::array();
  for (const std::string& m : merges) {
    if (pairs) {
      const size_t sp = m.find(' ');
      model["merges"].push_back({m.substr(0, sp), m.substr(sp + 1)});
    } else {
      model["merges"].push_back(m);
    }
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["added_tokens"] = nlohmann::ordered_json::parse(added_tokens);
  j["model"] = model;
  return j.dump(2);
}

// ---------------------------------------------------------------------------------------------
// The tiny vocabulary: five byte tokens and six merges, small enough to follow by hand.

const std::vector<std::pair<std::string, int>> kTinyVocab = {
    {"a", 0},    {"b", 1},   {"c", 2},       {"d", 3},  {"\u0120", 4} /* Ġ = space */,
    {"ab", 5},   {"abc", 6}, {"\u0120a", 7}, {"bc", 8}, {"aa", 9},
    {"aaaa", 10}};
const std::vector<std::string> kTinyMerges = {
    "a b",       // rank 0
    "ab c",      // rank 1
    "\u0120 a",  // rank 2
    "b c",       // rank 3
    "a a",       // rank 4
    "aa aa",     // rank 5
};

BpeTokenizer tiny() {
  return BpeTokenizer::from_vocab_and_merges_text(vocab_json(kTinyVocab), merges_txt(kTinyMerges),
                                                  "tiny/vocab.json", "tiny/merges.txt");
}

// ---------------------------------------------------------------------------------------------
// The "full" vocabulary: all 256 byte tokens with id = byte value, eleven merges that are
// GPT-2's first ones and a few of our own, and <|endoftext|>.

std::string byte_token(int b) {
  std::string s;
  append_utf8(s, byte_to_unicode(static_cast<uint8_t>(b)));
  return s;
}

const std::vector<std::string> kFullMerges = {
    "\u0120 t",       // 256 Ġt
    "\u0120 a",       // 257 Ġa
    "h e",            // 258 he
    "i n",            // 259 in
    "r e",            // 260 re
    "o n",            // 261 on
    "\u0120t he",     // 262 Ġthe
    "e r",            // 263 er
    "\u0120 s",       // 264 Ġs
    "in g",           // 265 ing
    "\u00C3 \u00A9",  // 266 Ã© = the bytes C3 A9 of é
};

std::vector<std::pair<std::string, int>> full_vocab_entries() {
  std::vector<std::pair<std::string, int>> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(byte_token(b), b);
  int id = 256;
  for (const std::string& m : kFullMerges) {
    const size_t sp = m.find(' ');
    v.emplace_back(m.substr(0, sp) + m.substr(sp + 1), id++);
  }
  v.emplace_back("<|endoftext|>", id);  // 267
  return v;
}

BpeTokenizer full() {
  return BpeTokenizer::from_vocab_and_merges_text(vocab_json(full_vocab_entries()),
                                                  merges_txt(kFullMerges), "full/vocab.json",
                                                  "full/merges.txt");
}

Ids bytes_of(std::string_view s) {
  Ids out;
  for (unsigned char c : s) out.push_back(c);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Byte alphabet

TEST(BpeByteMap, SameCodePointForPrintableBytes) {
  for (int b = 33; b <= 126; ++b) EXPECT_EQ(byte_to_unicode(static_cast<uint8_t>(b)), char32_t(b));
  for (int b = 161; b <= 172; ++b) EXPECT_EQ(byte_to_unicode(static_cast<uint8_t>(b)), char32_t(b));
  for (int b = 174; b <= 255; ++b) EXPECT_EQ(byte_to_unicode(static_cast<uint8_t>(b)), char32_t(b));
}

TEST(BpeByteMap, TheOther68BytesMapToU0100Onwards) {
  std::vector<int> others;
  for (int b = 0; b <= 32; ++b) others.push_back(b);
  for (int b = 127; b <= 160; ++b) others.push_back(b);
  others.push_back(173);
  ASSERT_EQ(others.size(), 68u);
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_EQ(byte_to_unicode(static_cast<uint8_t>(others[i])), char32_t(0x100 + i))
        << "byte " << others[i];
  }
  EXPECT_EQ(byte_to_unicode(' '), char32_t{0x120});   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), char32_t{0x10A});  // Ċ
  EXPECT_EQ(byte_to_unicode(0), char32_t{0x100});
  EXPECT_EQ(byte_to_unicode(127), char32_t{0x121});
  EXPECT_EQ(byte_to_unicode(173), char32_t{0x143});
}

TEST(BpeByteMap, IsABijectionWithItsInverse) {
  std::vector<bool> hit(0x144, false);
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_to_unicode(static_cast<uint8_t>(b));
    ASSERT_LT(c, 0x144u);
    EXPECT_FALSE(hit[c]) << "two bytes map to U+" << std::hex << static_cast<uint32_t>(c);
    hit[c] = true;
    EXPECT_EQ(unicode_to_byte(c), b);
  }
  int outside = 0;
  for (char32_t c = 0; c < 0x200; ++c) outside += unicode_to_byte(c) < 0;
  EXPECT_EQ(outside, 0x200 - 256);
  EXPECT_EQ(unicode_to_byte(U' '), -1);  // the space itself is not in the alphabet
  EXPECT_EQ(unicode_to_byte(0x144), -1);
  EXPECT_EQ(unicode_to_byte(0x10FFFF), -1);
}

// ---------------------------------------------------------------------------------------------
// UTF-8 repair (expected results from the WHATWG Encoding standard's UTF-8 decoder)

TEST(SanitizeUtf8, ReplacesEachMaximalInvalidSubpart) {
  const std::string R = "\xEF\xBF\xBD";  // U+FFFD
  struct Case {
    std::string in, want;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"plain ASCII", "plain ASCII"},
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"\xF0\x9F\x98"
       "a",
       R + "a"},                    // truncated 4-byte sequence: one U+FFFD
      {"\xED\xA0\x80", R + R + R},  // a surrogate: ED cannot take A0
      {"\xC0\x80", R + R},          // C0 starts nothing
      {"\x80", R},
      {"a\xFF"
       "b",
       "a" + R + "b"},
      {"\xE2\x82", R},  // truncated at the end
      {"\xE2\x82"
       "x",
       R + "x"},
      {"\xF4\x90\x80\x80", R + R + R + R},  // above U+10FFFF: F4 cannot take 90
      {"\xE0\x80\x80", R + R + R},          // overlong: E0 cannot take 80
      {"\xE0\xA0", R},
      {"\xF0\x90\x80", R},
      {"\xF0\x90\x80\xF0\x9F\x98\x80", R + "\xF0\x9F\x98\x80"},
      {"\xF5\x80", R + R},
      {"\xC3\xC3\xA9", R + "\xC3\xA9"},
      // The example of the Unicode Standard (chapter 3, "U+FFFD Substitution of Maximal
      // Subparts"): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
      {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
       "a" + R + R + R + "b" + R + "c" + R + R + "d"},
  };
  for (const Case& c : cases)
    EXPECT_EQ(sanitize_utf8(c.in), c.want) << "input size " << c.in.size();
}

TEST(SanitizeUtf8, OutputIsAlwaysValid) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 128 : 0x80 + rng() % 128);
    const std::string out = sanitize_utf8(s);
    EXPECT_TRUE(is_valid_utf8(out, nullptr));
    EXPECT_EQ(sanitize_utf8(out), out);
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding, worked out by hand

TEST(BpeEncode, TinyVocabularyByHand) {
  const BpeTokenizer t = tiny();
  EXPECT_EQ(t.vocab_size(), 11);
  EXPECT_EQ(t.num_merges(), 6);
  EXPECT_EQ(t.eot_id(), std::nullopt);
  // a b c: (a,b) rank 0 -> [ab c]; (ab,c) rank 1 -> [abc].
  EXPECT_EQ(t.encode("abc"), (Ids{6}));
  // b c d: (b,c) rank 3, (c,d) unranked -> [bc d].
  EXPECT_EQ(t.encode("bcd"), (Ids{8, 3}));
  // Ġ a b c: (a,b) rank 0 beats (Ġ,a) rank 2 -> [Ġ ab c] -> [Ġ abc]; Ġa never forms.
  EXPECT_EQ(t.encode(" abc"), (Ids{4, 6}));
  // Ġ a c: (Ġ,a) rank 2 -> [Ġa c].
  EXPECT_EQ(t.encode(" ac"), (Ids{7, 2}));
  // a a a a a: (a,a) rank 4 left to right, non-overlapping -> [aa aa a] -> [aaaa a].
  EXPECT_EQ(t.encode("aaaaa"), (Ids{10, 0}));
  EXPECT_EQ(t.encode("aaa"), (Ids{9, 0}));
  EXPECT_EQ(t.encode("a"), (Ids{0}));
  EXPECT_EQ(t.encode(""), (Ids{}));
  // Two pre-tokens, "abcd" and " abc".
  EXPECT_EQ(t.encode("abcd abc"), (Ids{6, 3, 4, 6}));
  EXPECT_EQ(t.decode(Ids{6, 3, 4, 6}), "abcd abc");
  EXPECT_EQ(t.token(7), "\u0120a");
  EXPECT_EQ(t.token_bytes(7), " a");
  EXPECT_EQ(t.token_id("\u0120a"), 7);
  EXPECT_EQ(t.token_id(" a"), std::nullopt);
}

TEST(BpeEncode, MissingByteTokenIsAnError) {
  const BpeTokenizer t = tiny();
  try {
    t.encode("abx");
    FAIL() << "byte without a token accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "0x78")) << e.what();
  }
  EXPECT_THROW(t.encode("x"), Error);
}

// A merge list need not rank a pair after the merges that make its parts. Then the plain
// algorithm (all occurrences of the best pair, then look again) differs from merging one
// occurrence at a time: a b a b -> [ab ab] (rank 1 everywhere first), not [aba b].
TEST(BpeEncode, AllOccurrencesOfTheBestPairMergeBeforeTheNextRank) {
  const BpeTokenizer t = BpeTokenizer::from_vocab_and_merges_text(
      vocab_json({{"a", 0}, {"b", 1}, {"ab", 2}, {"aba", 3}}), merges_txt({"ab a", "a b"}),
      "v.json", "m.txt");
  EXPECT_EQ(t.encode("abab"), (Ids{2, 2}));
  // a b a b a -> [ab ab a] -> (ab,a) rank 0 -> [ab aba].
  EXPECT_EQ(t.encode("ababa"), (Ids{2, 3}));
  EXPECT_EQ(t.encode("aba"), (Ids{3}));
}

TEST(BpeEncode, FullVocabularyByHand) {
  const BpeTokenizer t = full();
  EXPECT_EQ(t.vocab_size(), 268);
  EXPECT_EQ(t.eot_id(), 267);
  // Ġ t h e: (Ġ,t) rank 0 -> [Ġt h e]; (h,e) rank 2 -> [Ġt he]; (Ġt,he) rank 6 -> [Ġthe].
  EXPECT_EQ(t.encode(" the"), (Ids{262}));
  EXPECT_EQ(t.encode("the"), (Ids{'t', 258}));
  EXPECT_EQ(t.encode("ing"), (Ids{265}));
  // Ġ s i n g: (i,n) rank 3 -> [Ġ s in g]; (Ġ,s) rank 8 -> [Ġs in g]; (in,g) rank 9.
  EXPECT_EQ(t.encode(" sing"), (Ids{264, 265}));
  // h e r e: (h,e) rank 2 -> [he r e]; (r,e) rank 4 -> [he re]. "e r" (rank 7) never fires.
  EXPECT_EQ(t.encode("here"), (Ids{258, 260}));
  // é is C3 A9: Ã ©, merged by rank 10.
  EXPECT_EQ(t.encode("caf\u00E9"), (Ids{'c', 'a', 'f', 266}));
  EXPECT_EQ(t.encode("\n"), (Ids{'\n'}));
  EXPECT_EQ(t.encode("Hello world"), (Ids{'H', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}));
  // Whitespace pieces: "a", "  \n", " b" (the space before b is Ġ, unmerged here).
  EXPECT_EQ(t.encode("a  \n b"), (Ids{'a', ' ', ' ', '\n', ' ', 'b'}));
}

TEST(BpeEncode, InvalidUtf8IsReplacedBeforeEncoding) {
  const BpeTokenizer t = full();
  // F0 9F 98 'a' -> U+FFFD 'a' = EF BF BD 'a' (one punctuation piece and one word).
  EXPECT_EQ(t.encode("\xF0\x9F\x98"
                     "a"),
            (Ids{0xEF, 0xBF, 0xBD, 'a'}));
  EXPECT_EQ(t.encode("\x80"), (Ids{0xEF, 0xBF, 0xBD}));
  EXPECT_EQ(t.encode(" \xC0\x80"), (Ids{' ', 0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD}));
}

TEST(BpeEncode, SpecialTokensOnlyWhenAllowed) {
  const BpeTokenizer t = full();
  EXPECT_EQ(t.special_ids(), (Ids{267}));
  EXPECT_EQ(t.encode("<|endoftext|>", true), (Ids{267}));
  // Otherwise ordinary text: "<|", "endoftext", "|>", no merge applies.
  EXPECT_EQ(t.encode("<|endoftext|>"), bytes_of("<|endoftext|>"));
  EXPECT_EQ(t.encode("<|endoftext|>", false), bytes_of("<|endoftext|>"));
  EXPECT_EQ(t.encode("a<|endoftext|>b", true), (Ids{'a', 267, 'b'}));
  EXPECT_EQ(t.encode("<|endoftext|><|endoftext|> the", true), (Ids{267, 267, 262}));
  // The text on each side is pre-tokenized on its own: " the" after the token stays one piece.
  EXPECT_EQ(t.encode(" the<|endoftext|> the", true), (Ids{262, 267, 262}));
  EXPECT_EQ(t.encode("<|endoftext|", true), bytes_of("<|endoftext|"));
  EXPECT_EQ(t.decode(Ids{267}), "<|endoftext|>");
}

// Progress from inside the encoder: the same ids, reports at least `every` bytes apart at
// piece ends, increasing, the last one the whole (repaired) text; special tokens too.
TEST(BpeEncode, ProgressReportsBytesAndKeepsTheTokens) {
  const BpeTokenizer t = full();
  std::string text;
  for (int i = 0; i < 200; ++i) text += i % 7 == 0 ? " the<|endoftext|>\x80" : " the a the";
  for (const bool special : {false, true}) {
    std::vector<std::pair<size_t, size_t>> calls;
    const Ids ids = t.encode(
        text, special, [&](size_t done, size_t total) { calls.emplace_back(done, total); }, 100);
    EXPECT_EQ(ids, t.encode(text, special));
    const size_t total = sanitize_utf8(text).size();
    ASSERT_GT(calls.size(), 5u);
    EXPECT_EQ(calls.back(), std::make_pair(total, total));
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].second, total);
      if (i > 0) {
        EXPECT_GT(calls[i].first, calls[i - 1].first);
      }
      if (i + 1 < calls.size()) {
        EXPECT_GE(calls[i].first, 100 * (i + 1));
      }
    }
  }
  size_t n = 0;
  EXPECT_TRUE(
      t.encode("", false, [&](size_t done, size_t total) { n += 1 + done + total; }).empty());
  EXPECT_EQ(n, 1u);  // once, at the end
}

TEST(BpeEncode, AddedSpecialTokensFromTokenizerJson) {
  auto entries = full_vocab_entries();
  entries.emplace_back("<|pad|>", 268);
  const std::string added =
      R"([{"id": 267, "content": "<|endoftext|>", "special": true},
          {"id": 268, "content": "<|pad|>", "special": true},
          {"id": 269, "content": "<|x|>", "special": true},
          {"id": 270, "content": "<|im start|>", "special": true},
          {"id": 271, "content": "plain", "special": false}])";
  const BpeTokenizer t = BpeTokenizer::from_tokenizer_json_text(
      tokenizer_json(entries, kFullMerges, false, added), "t.json");
  EXPECT_EQ(t.vocab_size(), 272);  // 269..271 exist only among the added tokens
  EXPECT_EQ(t.special_ids(), (Ids{267, 268, 269, 270}));
  EXPECT_EQ(t.encode("a<|pad|><|x|><|endoftext|>", true), (Ids{'a', 268, 269, 267}));
  // "plain" is not special: it is ordinary text, where (i,n) merges.
  EXPECT_EQ(t.encode("<|im start|>plain", true), (Ids{270, 'p', 'l', 'a', 259}));
  EXPECT_EQ(t.decode(Ids{269}), "<|x|>");
  // A token with a character outside the byte alphabet (the space) decodes as written.
  EXPECT_EQ(t.decode(Ids{270}), "<|im start|>");
  EXPECT_EQ(t.decode(Ids{271}), "plain");
}

// ---------------------------------------------------------------------------------------------
// Plain reference: GPT-2's bpe() on strings, quadratic, for comparison on random merge lists.

std::vector<std::string> plain_bpe(
    const std::string& piece, const std::map<std::pair<std::string, std::string>, int>& ranks) {
  std::vector<std::string> word;
  for (char c : piece) word.push_back(byte_token(static_cast<unsigned char>(c)));
  while (word.size() > 1) {
    int best = -1;
    std::pair<std::string, std::string> bigram;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = ranks.find({word[i], word[i + 1]});
      if (it != ranks.end() && (best < 0 || it->second < best)) {
        best = it->second;
        bigram = it->first;
      }
    }
    if (best < 0) break;
    std::vector<std::string> next;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == bigram.first && word[i + 1] == bigram.second) {
        next.push_back(word[i] + word[i + 1]);
        i += 2;
      } else {
        next.push_back(word[i++]);
      }
    }
    word = std::move(next);
  }
  return word;
}

TEST(BpeEncode, MatchesThePlainAlgorithmOnRandomMergeLists) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 40; ++trial) {
    // Tokens over the letters a b c; merges made from random pairs of existing tokens, then
    // ranked in a random order (so parts may rank after the merges that use them).
    std::vector<std::string> tokens = {"a", "b", "c"};
    std::vector<std::pair<std::string, std::string>> merges;
    std::map<std::pair<std::string, std::string>, int> ranks;
    for (int k = 0; k < 60; ++k) {
      const std::string& x = tokens[rng() % tokens.size()];
      const std::string& y = tokens[rng() % tokens.size()];
      if (x.size() + y.size() > 8 || ranks.count({x, y})) continue;
      const std::string xy = x + y;
      merges.emplace_back(x, y);
      ranks[{x, y}] = 0;
      if (std::find(tokens.begin(), tokens.end(), xy) == tokens.end()) tokens.push_back(xy);
    }
    if (trial % 2) std::shuffle(merges.begin(), merges.end(), rng);
    std::vector<std::pair<std::string, int>> entries;
    for (size_t i = 0; i < tokens.size(); ++i) entries.emplace_back(tokens[i], static_cast<int>(i));
    std::vector<std::string> lines;
    for (size_t r = 0; r < merges.size(); ++r) {
      ranks[merges[r]] = static_cast<int>(r);
      lines.push_back(merges[r].first + " " + merges[r].second);
    }
    const BpeTokenizer t =
        BpeTokenizer::from_vocab_and_merges_text(vocab_json(entries), merges_txt(lines), "v", "m");
    for (int s = 0; s < 30; ++s) {
      const size_t len = s < 25 ? 1 + rng() % 30 : 500 + rng() % 2000;
      std::string piece(len, 'a');
      const int letters = 1 + static_cast<int>(rng() % 3);
      for (char& c : piece) c = static_cast<char>('a' + rng() % letters);
      Ids want;
      for (const std::string& tok : plain_bpe(piece, ranks)) want.push_back(*t.token_id(tok));
      ASSERT_EQ(t.encode(piece), want) << "trial " << trial << ", piece " << piece;
    }
  }
}

// 1 MB of one letter is a single pre-token; merging it must not take quadratic time.
// Four times the input in a run of one character: a linear encoder takes about 4x the time, a
// quadratic one 16x (minutes at 1 MiB). The bound holds on a quiet machine (5 s) or relative to
// the small run's time, so a machine slowed down throughout (the sanitizers, other jobs) passes
// while a quadratic encoder fails both.
void expect_not_quadratic(double t_small, double t_big) {
  EXPECT_TRUE(t_big < 5.0 || t_big < 8 * t_small)
      << "1 MiB took " << t_big << " s, 256 KiB " << t_small << " s";
}

TEST(BpeEncode, HugePieceIsNotQuadratic) {
  const BpeTokenizer t = tiny();
  double t_small = 0, t_big = 0;
  for (size_t n : {size_t{1} << 18, size_t{1} << 20}) {
    const std::string text(n + 1, 'a');
    const auto t0 = std::chrono::steady_clock::now();
    const Ids ids = t.encode(text);
    const double s = seconds_since(t0);
    (n == (size_t{1} << 18) ? t_small : t_big) = s;
    // (a,a) pairs up all of them, then (aa,aa): n/4 tokens aaaa and the odd a at the end.
    Ids want(n / 4, 10);
    want.push_back(0);
    EXPECT_EQ(ids, want);
  }
  std::printf(
      "[ info     ] BPE on one run of 'a': 256 KiB in %.1f ms (%.0f ns/byte), 1 MiB in "
      "%.1f ms (%.0f ns/byte)\n",
      t_small * 1e3, t_small * 1e9 / (1 << 18), t_big * 1e3, t_big * 1e9 / (1 << 20));
  expect_not_quadratic(t_small, t_big);
}

TEST(BpeEncode, ConcurrentEncodesAgree) {
  const BpeTokenizer t = full();
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) {
    std::string s;
    for (int k = 0; k < 400; ++k) s += (k + i) % 3 ? " the sing here" : " caf\u00E9 ing\n";
    texts.push_back(s);
  }
  std::vector<Ids> want;
  for (const std::string& s : texts) want.push_back(full().encode(s));
  std::vector<Ids> got(texts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 5; ++rep) got[i] = t.encode(texts[i]);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(got, want);
}

// ---------------------------------------------------------------------------------------------
// Round trips

std::vector<std::string> round_trip_texts() {
  std::vector<std::string> texts = {
      "",
      "Hello world",
      " the  sing\n\nhere's  it's  I'M ",
      "caf\u00E9 na\u00EFve \u65E5\u672C\u8A9E \U0001F600\U0001F44B\U0001F3FD",
      "\t\r\n\v\f \u00A0\u3000\uFEFF\u2028",
      std::string("nul\0byte", 8),
      "\xF0\x9F\x98"
      "a\xED\xA0\x80\xC0\x80\x80\xFF",
      "<|endoftext|> <|endoftext|",
      "$1,234.56 + 7\u00BD% = ?!",
  };
  std::mt19937 rng(99);
  const std::vector<std::string> atoms = {
      "a",      "e",          "Z",      "0", " ",    "  ",   "\n",   "'",    "'s", "\u00E9",
      "\u65E5", "\U0001F600", "\u0301", "!", "\xC3", "\xA9", "\x80", "\xF0", "\t", "<|endoftext|>"};
  for (int i = 0; i < 300; ++i) {
    std::string s;
    const size_t n = rng() % 30;
    for (size_t k = 0; k < n; ++k) s += atoms[rng() % atoms.size()];
    texts.push_back(s);
  }
  for (int i = 0; i < 100; ++i) {
    std::string s(rng() % 50, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    texts.push_back(s);
  }
  return texts;
}

TEST(BpeDecode, RoundTripGivesTheSanitizedText) {
  const BpeTokenizer t = full();
  for (const std::string& s : round_trip_texts()) {
    EXPECT_EQ(t.decode(t.encode(s)), sanitize_utf8(s));
    EXPECT_EQ(t.decode(t.encode(s, true)), sanitize_utf8(s));
  }
}

TEST(BpeDecode, UnknownIdsAreErrors) {
  const BpeTokenizer t = full();
  EXPECT_THROW(t.decode(Ids{268}), Error);
  EXPECT_THROW(t.decode(Ids{-1}), Error);
  EXPECT_THROW(t.token(268), Error);
  EXPECT_THROW(t.token_bytes(-5), Error);
  try {
    t.decode(Ids{1, 2, 1000});
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "1000")) << e.what();
  }
}

TEST(BpeDecode, DecodeMayReturnPartialCharacters) {
  const BpeTokenizer t = full();
  EXPECT_EQ(t.decode(Ids{0xC3}), "\xC3");
  EXPECT_EQ(t.decode(Ids{0xC3, 0xA9}), "\u00E9");
  EXPECT_EQ(t.decode(Ids{266}), "\u00E9");
}

TEST(StreamDecoder, HoldsBackIncompleteCharacters) {
  const BpeTokenizer t = full();
  StreamDecoder d(t);
  EXPECT_EQ(d.push('c'), "c");
  EXPECT_EQ(d.push(0xC3), "");        // first byte of é
  EXPECT_EQ(d.push(0xA9), "\u00E9");  // completed
  EXPECT_EQ(d.push(266), "\u00E9");   // both bytes in one token
  EXPECT_EQ(d.push(0xF0), "");        // 😀 = F0 9F 98 80, one byte at a time
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push(0x98), "");
  EXPECT_EQ(d.push(0x80), "\U0001F600");
  EXPECT_EQ(d.push(262), " the");
  EXPECT_EQ(d.finish(), "");
}

TEST(StreamDecoder, InvalidAndUnfinishedBytesBecomeReplacementCharacters) {
  const BpeTokenizer t = full();
  StreamDecoder d(t);
  EXPECT_EQ(d.push(0xFF), "\uFFFD");  // can never start a character
  EXPECT_EQ(d.push(0xC3), "");
  EXPECT_EQ(d.push('a'), "\uFFFDa");  // é cut short by an ASCII byte
  EXPECT_EQ(d.push(0xE2), "");
  EXPECT_EQ(d.push(0x82), "");
  EXPECT_EQ(d.finish(), "\uFFFD");  // € cut short by the end
  EXPECT_EQ(d.push(0xED), "");
  EXPECT_EQ(d.push(0xA0), "\uFFFD\uFFFD");  // a surrogate: ED cannot take A0
  EXPECT_EQ(d.finish(), "");
  EXPECT_THROW(d.push(268), Error);
  EXPECT_THROW(d.push(-1), Error);
}

TEST(StreamDecoder, ConcatenationEqualsSanitizedDecode) {
  const BpeTokenizer t = full();
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    Ids ids(rng() % 20);
    for (int& id : ids) id = static_cast<int>(rng() % 268);
    StreamDecoder d(t);
    std::string streamed;
    for (int id : ids) {
      const std::string part = d.push(id);
      EXPECT_TRUE(is_valid_utf8(part, nullptr));
      streamed += part;
    }
    streamed += d.finish();
    EXPECT_EQ(streamed, sanitize_utf8(t.decode(ids)));
  }
}

// ---------------------------------------------------------------------------------------------
// Loading

TEST(BpeLoad, MergesAsStringsAndAsPairsGiveTheSameTokenizer) {
  TempDir dir;
  write_text(dir.file("strings.json"), tokenizer_json(full_vocab_entries(), kFullMerges, false));
  write_text(dir.file("pairs.json"), tokenizer_json(full_vocab_entries(), kFullMerges, true));
  const BpeTokenizer a = BpeTokenizer::from_tokenizer_json(dir.file("strings.json"));
  const BpeTokenizer b = BpeTokenizer::from_tokenizer_json(dir.file("pairs.json"));
  const BpeTokenizer c = full();
  ASSERT_EQ(a.vocab_size(), 268);
  ASSERT_EQ(b.vocab_size(), 268);
  EXPECT_EQ(a.num_merges(), 11);
  EXPECT_EQ(b.num_merges(), 11);
  for (int id = 0; id < 268; ++id) {
    EXPECT_EQ(a.token(id), b.token(id));
    EXPECT_EQ(a.token(id), c.token(id));
  }
  for (const std::string& s : round_trip_texts()) {
    const Ids want = c.encode(s, true);
    EXPECT_EQ(a.encode(s, true), want);
    EXPECT_EQ(b.encode(s, true), want);
  }
  // " here": Ġ h e r e -> (h,e) rank 2 -> [Ġ he r e] -> (r,e) rank 4 -> [Ġ he re].
  EXPECT_EQ(a.encode(" the sing here"), (Ids{262, 264, 265, ' ', 258, 260}));
  EXPECT_EQ(b.encode(" the sing here"), (Ids{262, 264, 265, ' ', 258, 260}));
}

TEST(BpeLoad, MergesTextFormats) {
  const std::string vocab = vocab_json(kTinyVocab);
  // No #version line, CRLF line ends, blank lines at the end.
  std::string merges;
  for (const std::string& m : kTinyMerges) merges += m + "\r\n";
  merges += "\n\n";
  const BpeTokenizer t = BpeTokenizer::from_vocab_and_merges_text(vocab, merges, "v", "m");
  EXPECT_EQ(t.num_merges(), 6);
  // " aaaaa": (Ġ,a) rank 2 first -> [Ġa a a a a] -> [Ġa aa aa] -> [Ġa aaaa].
  EXPECT_EQ(t.encode(" abc aaaaa"), (Ids{4, 6, 7, 10}));
  // No newline after the last merge.
  std::string last = merges_txt(kTinyMerges);
  last.pop_back();
  EXPECT_EQ(BpeTokenizer::from_vocab_and_merges_text(vocab, last, "v", "m").num_merges(), 6);
}

TEST(BpeLoad, FromDirectoryTriesTheThreeFormsInOrder) {
  TempDir dir;
  const std::string d = dir.path().string();
  EXPECT_THROW(BpeTokenizer::from_directory(d), Error);
  write_text(dir.file("encoder.json"), vocab_json(kTinyVocab));
  write_text(dir.file("vocab.bpe"), merges_txt(kTinyMerges));
  EXPECT_EQ(BpeTokenizer::from_directory(d).vocab_size(), 11);
  write_text(dir.file("vocab.json"), vocab_json(full_vocab_entries()));
  EXPECT_EQ(BpeTokenizer::from_directory(d).vocab_size(), 11);  // merges.txt missing
  write_text(dir.file("merges.txt"), merges_txt(kFullMerges));
  EXPECT_EQ(BpeTokenizer::from_directory(d).vocab_size(), 268);
  write_text(dir.file("tokenizer.json"),
             tokenizer_json({{"a", 0}, {"b", 1}, {"ab", 2}}, {"a b"}, false));
  EXPECT_EQ(BpeTokenizer::from_directory(d).vocab_size(), 3);
  try {
    BpeTokenizer::from_directory(dir.file("nowhere"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "nowhere")) << e.what();
    EXPECT_TRUE(contains(e.what(), "tokenizer.json")) << e.what();
  }
}

TEST(BpeLoad, SaveTokenizerJsonRoundTrips) {
  TempDir dir;
  auto entries = full_vocab_entries();
  entries.emplace_back("<|pad|>", 268);
  const std::string added = R"([{"id": 268, "content": "<|pad|>", "special": true}])";
  const BpeTokenizer t = BpeTokenizer::from_tokenizer_json_text(
      tokenizer_json(entries, kFullMerges, true, added), "t.json");
  t.save_tokenizer_json(dir.file("tokenizer.json"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("tokenizer.json.tmp")));
  const std::string text = test::read_text(dir.file("tokenizer.json"));
  EXPECT_TRUE(contains(text, "\"\\u0120t he\"") || contains(text, "\"\u0120t he\""))
      << "merges as strings";
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["model"]["merges"][6], "\u0120t he");
  EXPECT_EQ(j["model"]["vocab"]["\u0120the"], 262);
  EXPECT_EQ(j["added_tokens"].size(), 2u);
  const BpeTokenizer u = BpeTokenizer::from_tokenizer_json(dir.file("tokenizer.json"));
  ASSERT_EQ(u.vocab_size(), t.vocab_size());
  EXPECT_EQ(u.num_merges(), t.num_merges());
  EXPECT_EQ(u.special_ids(), t.special_ids());
  EXPECT_EQ(u.eot_id(), 267);
  for (int id = 0; id < t.vocab_size(); ++id) EXPECT_EQ(u.token(id), t.token(id));
  for (const std::string& s : round_trip_texts()) EXPECT_EQ(u.encode(s, true), t.encode(s, true));
  // A copy shares the vocabulary and encodes the same.
  const BpeTokenizer copy = u;
  EXPECT_EQ(copy.encode(" the<|pad|>", true), (Ids{262, 268}));
}

// Each malformed file is refused with an Error that names the file and the problem.
void expect_load_error(const std::function<void()>& load, const std::vector<std::string>& parts) {
  try {
    load();
    ADD_FAILURE() << "loaded, expected an error mentioning '" << parts.back() << "'";
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_TRUE(contains(e.what(), p)) << e.what();
  }
}

void expect_json_error(const std::string& json, const std::string& problem) {
  expect_load_error([&] { BpeTokenizer::from_tokenizer_json_text(json, "bad/tokenizer.json"); },
                    {"bad/tokenizer.json", problem});
}

void expect_pair_error(const std::string& vocab, const std::string& merges, const std::string& file,
                       const std::string& problem) {
  expect_load_error(
      [&] {
        BpeTokenizer::from_vocab_and_merges_text(vocab, merges, "bad/vocab.json", "bad/merges.txt");
      },
      {file, problem});
}

const std::vector<std::pair<std::string, int>> kAb = {{"a", 0}, {"b", 1}, {"ab", 2}};

TEST(BpeLoadErrors, TokenizerJsonInvalidJson) {
  expect_json_error(R"({"model": {"vocab": {"a": 0}, "merges": [}})", "invalid JSON");
}

TEST(BpeLoadErrors, TokenizerJsonNotAnObject) { expect_json_error("[1, 2]", "not a JSON object"); }

TEST(BpeLoadErrors, TokenizerJsonMissingModel) {
  expect_json_error(R"({"version": "1.0"})", "\"model\"");
}

TEST(BpeLoadErrors, TokenizerJsonMissingVocab) {
  expect_json_error(R"({"model": {"type": "BPE", "merges": ["a b"]}})", "model.vocab");
}

TEST(BpeLoadErrors, TokenizerJsonMissingMerges) {
  expect_json_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", "model.merges");
}

// A tokenizer.json without merges is a valid BPE (a byte or character vocabulary): each byte
// its own token. (A merges.txt without merges is refused: more likely cut short.)
TEST(BpeLoadErrors, TokenizerJsonWithoutMergesEncodesByteByByte) {
  const BpeTokenizer tok =
      BpeTokenizer::from_tokenizer_json_text(tokenizer_json(kAb, {}, false), "none/tokenizer.json");
  EXPECT_EQ(tok.num_merges(), 0);
  EXPECT_EQ(tok.encode("abba"), (std::vector<int>{0, 1, 1, 0}));
  try {
    tok.encode("abc");
    ADD_FAILURE() << "'c' has no token";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no token for the character 'c' (U+0063; byte 0x63"),
              std::string::npos)
        << e.what();
  }
}

TEST(BpeLoadErrors, TokenizerJsonNotBpe) {
  expect_json_error(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}, "merges": ["a a"]}})",
                    "WordPiece");
}

TEST(BpeLoadErrors, TokenizerJsonMalformedMerge) {
  const std::string j = R"({"model": {"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [)";
  expect_json_error(j + R"(["a", "b", "c"]]}})", "model.merges[0]");
  expect_json_error(j + R"("a b", 7]}})", "model.merges[1]");
  expect_json_error(j + R"("ab"]}})", "model.merges[0]");
  expect_json_error(j + R"("a  b"]}})", "model.merges[0]");
  expect_json_error(j + R"(["a", ""]]}})", "model.merges[0]");
}

TEST(BpeLoadErrors, TokenizerJsonMergePartNotInVocabulary) {
  expect_json_error(tokenizer_json(kAb, {"a b", "a c"}, true), "'c' is not in the vocabulary");
}

TEST(BpeLoadErrors, TokenizerJsonMergeResultNotInVocabulary) {
  expect_json_error(tokenizer_json(kAb, {"a b", "b a"}, false), "'ba' is not in the vocabulary");
}

TEST(BpeLoadErrors, TokenizerJsonDuplicateIds) {
  expect_json_error(tokenizer_json({{"a", 0}, {"b", 1}, {"ab", 1}}, {"a b"}, false),
                    "have the same id 1");
}

TEST(BpeLoadErrors, TokenizerJsonNonIntegerId) {
  expect_json_error(R"({"model": {"vocab": {"a": 0, "b": 1.5, "ab": 2}, "merges": ["a b"]}})",
                    "not an integer");
  expect_json_error(R"({"model": {"vocab": {"a": 0, "b": "1", "ab": 2}, "merges": ["a b"]}})",
                    "not an integer");
}

TEST(BpeLoadErrors, TokenizerJsonIdOutOfRange) {
  expect_json_error(tokenizer_json({{"a", 0}, {"b", -1}, {"ab", 2}}, {"a b"}, false),
                    "out of range");
  expect_json_error(tokenizer_json({{"a", 0}, {"b", 5}, {"ab", 2}}, {"a b"}, false),
                    "out of range");
}

TEST(BpeLoadErrors, TokenizerJsonAddedTokenDisagreesWithVocabulary) {
  expect_json_error(
      tokenizer_json(kAb, {"a b"}, false, R"([{"id": 1, "content": "ab", "special": true}])"),
      "added token 'ab' has id 1");
  expect_json_error(tokenizer_json(kAb, {"a b"}, false, R"([{"id": 3}])"), "added_tokens[0]");
  expect_json_error(tokenizer_json(kAb, {"a b"}, false, R"({"id": 3})"), "added_tokens");
}

TEST(BpeLoadErrors, TokenizerJsonUnsupportedSettings) {
  const std::string tail = R"(, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})";
  expect_json_error(R"({"model": {"byte_fallback": true)" + tail, "byte_fallback");
  expect_json_error(R"({"model": {"continuing_subword_prefix": "##")" + tail,
                    "continuing_subword_prefix");
  expect_json_error(R"({"model": {"dropout": 0.1)" + tail, "dropout");
  expect_json_error(R"({"normalizer": {"type": "NFC"}, "model": {"type": "BPE")" + tail,
                    "normalizer");
  expect_json_error(R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true},
                       "model": {"type": "BPE")" +
                        tail,
                    "pre_tokenizer");
  // What GPT-2's own tokenizer.json has is accepted.
  EXPECT_NO_THROW(BpeTokenizer::from_tokenizer_json_text(
      R"({"normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
          "trim_offsets": true, "use_regex": true}, "model": {"type": "BPE", "dropout": null,
          "unk_token": null, "continuing_subword_prefix": "", "end_of_word_suffix": "",
          "fuse_unk": false, "byte_fallback": false)" +
          tail,
      "ok.json"));
}

TEST(BpeLoadErrors, TokenizerJsonDuplicateKey) {
  expect_json_error(R"({"model": {"vocab": {"a": 0, "a": 1}, "merges": ["a a"]}})",
                    "duplicate key 'a'");
}

TEST(BpeLoadErrors, MissingFile) {
  TempDir dir;
  expect_load_error([&] { BpeTokenizer::from_tokenizer_json(dir.file("none.json")); },
                    {"none.json", "cannot open"});
  write_text(dir.file("vocab.json"), vocab_json(kAb));
  expect_load_error(
      [&] { BpeTokenizer::from_vocab_and_merges(dir.file("vocab.json"), dir.file("merges.txt")); },
      {"merges.txt", "cannot open"});
}

TEST(BpeLoadErrors, VocabInvalidJson) {
  expect_pair_error("{\"a\": 0,", merges_txt({"a b"}), "bad/vocab.json", "invalid JSON");
}

TEST(BpeLoadErrors, VocabNotAnObject) {
  expect_pair_error("[\"a\", \"b\"]", merges_txt({"a b"}), "bad/vocab.json", "not a JSON object");
}

TEST(BpeLoadErrors, VocabNonIntegerId) {
  expect_pair_error(R"({"a": 0, "b": 1, "ab": null})", merges_txt({"a b"}), "bad/vocab.json",
                    "not an integer");
}

TEST(BpeLoadErrors, VocabDuplicateIds) {
  expect_pair_error(R"({"a": 0, "b": 0, "ab": 2})", merges_txt({"a b"}), "bad/vocab.json",
                    "have the same id 0");
}

// A vocabulary without merges is valid (characters, bytes), but not one without tokens (a
// fuzzer found it loading).
TEST(BpeLoadErrors, VocabEmpty) {
  expect_json_error(R"({"model": {"vocab": {}, "merges": []}})", "the vocabulary is empty");
}

TEST(BpeLoadErrors, VocabEmptyToken) {
  expect_pair_error(R"({"a": 0, "b": 1, "ab": 2, "": 3})", merges_txt({"a b"}), "bad/vocab.json",
                    "empty token");
}

TEST(BpeLoadErrors, MergesNone) {
  expect_pair_error(vocab_json(kAb), "#version: 0.2\n", "bad/merges.txt", "no merges");
  expect_pair_error(vocab_json(kAb), "", "bad/merges.txt", "no merges");
}

TEST(BpeLoadErrors, MergesMalformedLine) {
  expect_pair_error(vocab_json(kAb), "#version: 0.2\na b\nab\n", "bad/merges.txt", "line 3");
  expect_pair_error(vocab_json(kAb), "a  b\n", "bad/merges.txt", "line 1");
  expect_pair_error(vocab_json(kAb), "a b c\n", "bad/merges.txt", "line 1");
}

TEST(BpeLoadErrors, MergesBlankLineInside) {
  expect_pair_error(vocab_json(kAb), "#version: 0.2\na b\n\na b\n", "bad/merges.txt",
                    "line 3: blank line");
}

TEST(BpeLoadErrors, MergesPartNotInVocabulary) {
  expect_pair_error(vocab_json(kAb), merges_txt({"a b", "x b"}), "bad/merges.txt",
                    "line 3: merge 'x b': 'x' is not in the vocabulary");
}

TEST(BpeLoadErrors, MergesResultNotInVocabulary) {
  expect_pair_error(vocab_json(kAb), merges_txt({"b b"}), "bad/merges.txt",
                    "'bb' is not in the vocabulary");
}

TEST(BpeLoadErrors, MergesRepeated) {
  expect_pair_error(vocab_json(kAb), merges_txt({"a b", "a b"}), "bad/merges.txt",
                    "repeats merge 0");
}

TEST(BpeLoadErrors, MergesInvalidUtf8) {
  expect_pair_error(vocab_json(kAb), "a b\n\xC3(\n", "bad/merges.txt", "invalid UTF-8");
}

// A token list by id (a GGUF's tokenizer.ggml.tokens), unlike a JSON object, can repeat a token.
TEST(BpeLoadErrors, TokenListRepeatsAToken) {
  const std::vector<std::string> tokens = {"a", "b", "ab", "b"}, merges = {"a b"};
  expect_load_error([&] { BpeTokenizer::from_tokens(tokens, merges, {}, "bad.gguf"); },
                    {"bad.gguf: token 'b' has the ids 1 and 3"});
  const std::vector<std::string> fine = {"a", "b", "ab"};
  EXPECT_EQ(BpeTokenizer::from_tokens(fine, merges, {}, "good.gguf").encode("ab"), (Ids{2}));
}

// ---------------------------------------------------------------------------------------------
// GPT-2's own vocabulary (data/gpt2/, when present)

bool have_gpt2() {
  return std::filesystem::exists(test::source_path("data/gpt2/encoder.json")) &&
         std::filesystem::exists(test::source_path("data/gpt2/vocab.bpe"));
}

// Loaded once (parsing the 1 MB encoder.json is the slow part).
const BpeTokenizer& gpt2() {
  static const BpeTokenizer t = [] {
    const auto t0 = std::chrono::steady_clock::now();
    BpeTokenizer loaded = BpeTokenizer::from_vocab_and_merges(
        test::source_path("data/gpt2/encoder.json"), test::source_path("data/gpt2/vocab.bpe"));
    std::printf("[ info     ] GPT-2 vocabulary loaded in %.0f ms\n", seconds_since(t0) * 1e3);
    return loaded;
  }();
  return t;
}

#define REQUIRE_GPT2() \
  if (!have_gpt2()) GTEST_SKIP() << "data/gpt2/encoder.json and vocab.bpe not present"

TEST(BpeGpt2, KnownIds) {
  REQUIRE_GPT2();
  const BpeTokenizer& t = gpt2();
  EXPECT_EQ(t.vocab_size(), 50257);
  EXPECT_EQ(t.num_merges(), 50000);
  EXPECT_EQ(t.eot_id(), 50256);
  EXPECT_EQ(t.encode("Hello world"), (Ids{15496, 995}));
  EXPECT_EQ(t.encode(" the"), (Ids{262}));
  EXPECT_EQ(t.encode("\n"), (Ids{198}));
  EXPECT_EQ(t.encode("<|endoftext|>", true), (Ids{50256}));
  // Without allow_special it is text; these are gpt-3-encoder's ids for it.
  EXPECT_EQ(t.encode("<|endoftext|>"), (Ids{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(t.token(262), "\u0120the");
  EXPECT_EQ(t.decode(Ids{15496, 995}), "Hello world");
}

TEST(BpeGpt2, RoundTrips) {
  REQUIRE_GPT2();
  for (const std::string& s : round_trip_texts()) {
    EXPECT_EQ(gpt2().decode(gpt2().encode(s)), sanitize_utf8(s));
  }
}

TEST(BpeGpt2, HugePieceIsNotQuadratic) {
  REQUIRE_GPT2();
  for (char c : {'a', ' ', '!', '7'}) {
    double t_small = 0, t_big = 0;
    for (size_t n : {size_t{1} << 18, size_t{1} << 20}) {
      const std::string text(n, c);
      const auto t0 = std::chrono::steady_clock::now();
      const Ids ids = gpt2().encode(text);
      (n == (size_t{1} << 18) ? t_small : t_big) = seconds_since(t0);
      EXPECT_EQ(gpt2().decode(ids), text);
    }
    std::printf(
        "[ info     ] GPT-2 on one run of '%c': 256 KiB in %.1f ms (%.0f ns/byte), 1 MiB "
        "in %.1f ms (%.0f ns/byte)\n",
        c, t_small * 1e3, t_small * 1e9 / (1 << 18), t_big * 1e3, t_big * 1e9 / (1 << 20));
    expect_not_quadratic(t_small, t_big);
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
