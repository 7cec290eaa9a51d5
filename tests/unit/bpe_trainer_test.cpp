// BPE trainer: words and merges equal those of an independent naive Python trainer
// (tools/bpe_train_reference.py, fixtures in tests/fixtures/bpe_trainer/), hand-worked merge
// orders for the counting and tie rules, and the trained tokenizer through the tokenizer.json
// loader: save -> load -> encode/decode round trips, special tokens, errors, determinism.
#include "tinylm/tokenizers/bpe_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::TempDir;

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

struct Reference {
  std::string corpus;
  nlohmann::json expected;
};

const Reference& reference() {
  static const Reference r = [] {
    Reference out;
    out.corpus = test::read_text(test::source_path("tests/fixtures/bpe_trainer/corpus.txt"));
    out.expected = nlohmann::json::parse(
        test::read_text(test::source_path("tests/fixtures/bpe_trainer/expected.json")));
    return out;
  }();
  return r;
}

std::vector<std::string> specials_of(const nlohmann::json& j) {
  return j.at("special_tokens").get<std::vector<std::string>>();
}

// The merges as pairs of byte strings.
std::vector<std::pair<std::string, std::string>> merge_bytes(const BpeTrainResult& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [a, b] : r.merges) out.emplace_back(r.token_bytes[a], r.token_bytes[b]);
  return out;
}

BpeTrainResult train_words(std::vector<BpeWordCount> words, int vocab_size,
                           std::vector<std::string> specials = {}) {
  BpeTrainConfig config;
  config.vocab_size = vocab_size;
  config.special_tokens = std::move(specials);
  return train_bpe_words(words, config);
}

using Merges = std::vector<std::pair<std::string, std::string>>;

// Random text: ASCII words, whitespace runs, digits, punctuation, 2-, 3- and 4-byte characters
// (emoji with ZWJ and skin tones), fragments of special tokens, and, when `invalid`, raw bytes
// that are not UTF-8.
std::string random_text(std::mt19937& rng, bool invalid) {
  static const std::vector<std::string> kParts = {"the",
                                                  " the",
                                                  "fox",
                                                  " jumps",
                                                  "Hello",
                                                  "world",
                                                  " ",
                                                  "  ",
                                                  "   ",
                                                  "\t",
                                                  "\n",
                                                  "\n\n",
                                                  "\r\n",
                                                  "0",
                                                  "42",
                                                  "3.14",
                                                  "1,000",
                                                  ",",
                                                  ".",
                                                  "!?",
                                                  "'s",
                                                  "'ll",
                                                  "\"",
                                                  "(",
                                                  ")",
                                                  "{}",
                                                  "é",
                                                  "ß",
                                                  "Ω",
                                                  "ж",
                                                  "ñ",
                                                  "€",
                                                  "中",
                                                  "文",
                                                  "日本",
                                                  "한",
                                                  "क्ष",
                                                  "e\u0301",
                                                  "\u00a0",
                                                  "\u3000",
                                                  "😀",
                                                  "🎉",
                                                  "👍🏽",
                                                  "👩‍👩‍👧",
                                                  "🇫🇷",
                                                  "<|",
                                                  "|>",
                                                  "endoftext",
                                                  "<|endoftext|>"};
  std::string out;
  const int n = std::uniform_int_distribution<int>(0, 40)(rng);
  for (int i = 0; i < n; ++i) {
    if (invalid && std::uniform_int_distribution<int>(0, 9)(rng) == 0) {
      out += static_cast<char>(std::uniform_int_distribution<int>(0x80, 0xFF)(rng));
    } else if (std::uniform_int_distribution<int>(0, 9)(rng) == 0) {
      // Any code point (not a surrogate).
      char32_t c = std::uniform_int_distribution<char32_t>(1, 0x10FFFF)(rng);
      if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
      append_utf8(out, c);
    } else {
      out += kParts[std::uniform_int_distribution<size_t>(0, kParts.size() - 1)(rng)];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Against the Python reference

TEST(BpeTrainer, WordsMatchThePythonRegexPreTokenizer) {
  const Reference& ref = reference();
  for (const auto& set : ref.expected.at("word_sets")) {
    const std::vector<std::string> specials = specials_of(set);
    std::vector<BpeWordCount> want;
    for (const auto& w : set.at("words")) {
      want.push_back({from_hex(w.at(0).get<std::string>()), w.at(1).get<int64_t>()});
    }
    ASSERT_GT(want.size(), 100u);
    EXPECT_EQ(count_bpe_words(ref.corpus, specials), want) << set.at("special_tokens").dump();
  }
}

TEST(BpeTrainer, MergesMatchThePythonReference) {
  const Reference& ref = reference();
  for (const auto& c : ref.expected.at("cases")) {
    SCOPED_TRACE(c.at("vocab_size").dump() + " " + c.at("special_tokens").dump());
    BpeTrainConfig config;
    config.vocab_size = c.at("vocab_size").get<int>();
    config.special_tokens = specials_of(c);
    const BpeTrainResult r = train_bpe(ref.corpus, config);
    Merges want;
    for (const auto& m : c.at("merges")) {
      want.emplace_back(from_hex(m.at(0).get<std::string>()), from_hex(m.at(1).get<std::string>()));
    }
    EXPECT_EQ(merge_bytes(r), want);
    EXPECT_EQ(r.vocab_size(), c.at("reached_vocab_size").get<int>());
    EXPECT_EQ(r.special_tokens, config.special_tokens);
    // The tokenizer.json spells the merges the way the reference does.
    const nlohmann::json tj = nlohmann::json::parse(r.tokenizer_json());
    EXPECT_EQ(tj.at("model").at("merges"), c.at("merges_byte_level"));
  }
}

TEST(BpeTrainer, APairThatWouldSpellASpecialTokenIsRefused) {
  // The reference case with the special token "Ġthe": " the" is the most frequent merge
  // otherwise, but its byte-level form is that token's text.
  const Reference& ref = reference();
  BpeTrainConfig config;
  config.vocab_size = 400;
  config.special_tokens = {"<|endoftext|>", "\u0120the"};
  const BpeTrainResult r = train_bpe(ref.corpus, config);
  for (int id = 0; id < 256 + static_cast<int>(r.merges.size()); ++id) {
    EXPECT_NE(r.token_bytes[id], " the");
  }
  const BpeTokenizer tok = r.tokenizer();
  const int special = tok.token_id("\u0120the").value();
  EXPECT_EQ(special, 399);
  EXPECT_EQ(tok.special_ids(), (std::vector<int>{398, 399}));
  EXPECT_EQ(tok.encode("\u0120the", /*allow_special=*/true), std::vector<int>{special});
  const std::vector<int> plain = tok.encode(" the", true);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok.decode(plain), " the");
}

TEST(BpeTrainer, StopsEarlyWhenEveryWordIsOneToken) {
  // vocab_size 100000 on a 4 KB corpus: training ends when no pair is left, with the vocabulary
  // the reference reaches, and then every word of the corpus encodes to one token (so encoding
  // reproduces the training segmentation).
  const Reference& ref = reference();
  BpeTrainConfig config;
  config.vocab_size = 100000;
  const BpeTrainResult r = train_bpe(ref.corpus, config);
  EXPECT_LT(r.vocab_size(), 2000);
  EXPECT_EQ(r.token_bytes.back(), "<|endoftext|>");
  EXPECT_EQ(r.vocab_size(), 256 + static_cast<int>(r.merges.size()) + 1);
  const BpeTokenizer tok = r.tokenizer();
  EXPECT_EQ(tok.vocab_size(), r.vocab_size());
  for (const BpeWordCount& w : count_bpe_words(ref.corpus, config.special_tokens)) {
    EXPECT_EQ(tok.encode(w.word).size(), 1u) << w.word;
  }
}

// ---------------------------------------------------------------------------------------------
// The rules on hand-worked examples

TEST(BpeTrainer, OverlappingOccurrencesCountButMergeLeftToRight) {
  // "aaa" holds (a, a) twice: count 2 beats (a, b)'s 1. It becomes [aa][a]; then (aa, a) and
  // (a, b) both count 1 and "a" < "aa" puts (a, b) first.
  const BpeTrainResult r = train_words({{"aaa", 1}, {"ab", 1}}, 300);
  EXPECT_EQ(merge_bytes(r), (Merges{{"a", "a"}, {"a", "b"}, {"aa", "a"}}));
  EXPECT_EQ(r.vocab_size(), 259);  // then every word is one token
}

TEST(BpeTrainer, CountsWeighWordFrequencies) {
  // (c, d) occurs in one word seen 5 times; (a, b) in three words seen once each.
  const BpeTrainResult r = train_words({{"ab", 1}, {"abx", 1}, {"yab", 1}, {"cd", 5}}, 258);
  EXPECT_EQ(merge_bytes(r), (Merges{{"c", "d"}, {"a", "b"}}));
}

TEST(BpeTrainer, TiesGoToTheSmallestBytesComparedUnsigned) {
  // Equal counts: the first symbol decides ("a" < "b"), then the second.
  EXPECT_EQ(merge_bytes(train_words({{"ba", 1}, {"ac", 1}}, 257)), (Merges{{"a", "c"}}));
  EXPECT_EQ(merge_bytes(train_words({{"ac", 1}, {"ab", 1}}, 257)), (Merges{{"a", "b"}}));
  // Bytes compare unsigned: 0xC3 (the lead byte of "é") sorts after 'z'.
  EXPECT_EQ(merge_bytes(train_words({{"\xC3\xA9", 1}, {"zz", 1}}, 257)), (Merges{{"z", "z"}}));
  // A proper prefix is smaller: after (a, b) (count 3), (ab, c) and (a, d) both count 1, and
  // "a" < "ab" puts (a, d) first.
  EXPECT_EQ(merge_bytes(train_words({{"ab", 2}, {"abc", 1}, {"ad", 1}}, 258)),
            (Merges{{"a", "b"}, {"a", "d"}}));
}

TEST(BpeTrainer, SpecialTokensAreCutOutOfTheCorpus) {
  // The corpus between the specials is "ab" twice; "<|endoftext|>" itself is not trained on.
  BpeTrainConfig config;
  config.vocab_size = 1000;
  const BpeTrainResult r = train_bpe("ab<|endoftext|>ab<|endoftext|><|endoftext|>", config);
  EXPECT_EQ(merge_bytes(r), (Merges{{"a", "b"}}));
  EXPECT_EQ(r.vocab_size(), 258);
  // Leftmost, then longest: "<|a|>x" is cut as the longer "<|a|>x", not "<|a|>".
  EXPECT_EQ(count_bpe_words("q<|a|>xq", std::vector<std::string>{"<|a|>", "<|a|>x"}),
            (std::vector<BpeWordCount>{{"q", 2}}));
}

TEST(BpeTrainer, InvalidUtf8IsRepairedBeforeCounting) {
  // Each maximal invalid subpart becomes U+FFFD, as BpeTokenizer::encode does.
  EXPECT_EQ(count_bpe_words("a\xFF"
                            "b",
                            {}),
            (std::vector<BpeWordCount>{{"a", 1}, {"\xEF\xBF\xBD", 1}, {"b", 1}}));
}

// ---------------------------------------------------------------------------------------------
// Through tokenizer.json

TEST(BpeTrainer, SaveLoadEncodeDecodeRoundTrips) {
  const Reference& ref = reference();
  BpeTrainConfig config;
  config.vocab_size = 400;
  config.special_tokens = {"<|endoftext|>", "<|pad|>", "<special one>"};
  const BpeTrainResult r = train_bpe(ref.corpus, config);
  ASSERT_EQ(r.vocab_size(), 400);
  const BpeTokenizer fresh = r.tokenizer();
  TempDir dir;
  r.save_tokenizer_json(dir.file("tokenizer.json"));
  const BpeTokenizer loaded = BpeTokenizer::from_tokenizer_json(dir.file("tokenizer.json"));

  ASSERT_EQ(loaded.vocab_size(), 400);
  EXPECT_EQ(loaded.num_merges(), static_cast<int>(r.merges.size()));
  for (int id = 0; id < 400; ++id) {
    EXPECT_EQ(loaded.token(id), fresh.token(id));
    EXPECT_EQ(loaded.token_bytes(id), r.token_bytes[id]) << id;
  }
  EXPECT_EQ(loaded.special_ids(), (std::vector<int>{397, 398, 399}));
  EXPECT_EQ(loaded.eot_id(), std::optional<int>(397));

  std::mt19937 rng(1234);
  for (int i = 0; i < 600; ++i) {
    const bool invalid = i % 3 == 2;
    const std::string text = random_text(rng, invalid);
    for (const bool allow : {false, true}) {
      const std::vector<int> ids = loaded.encode(text, allow);
      ASSERT_EQ(ids, fresh.encode(text, allow)) << text;
      // Valid UTF-8 comes back as it was; invalid bytes come back repaired.
      ASSERT_EQ(loaded.decode(ids), sanitize_utf8(text)) << text;
      if (!invalid) {
        ASSERT_EQ(loaded.decode(ids), text);
      }
    }
  }
  // Saving the loaded tokenizer again writes the same file.
  loaded.save_tokenizer_json(dir.file("again.json"));
  EXPECT_EQ(test::read_text(dir.file("again.json")), test::read_text(dir.file("tokenizer.json")));
}

TEST(BpeTrainer, SpecialTokensAreRecognizedOnlyWhenAllowed) {
  BpeTrainConfig config;
  config.vocab_size = 350;
  config.special_tokens = {"<|endoftext|>", "<special one>"};
  const BpeTrainResult r = train_bpe(reference().corpus, config);
  const BpeTokenizer tok = r.tokenizer();
  const int eot = 348, other = 349;
  EXPECT_EQ(tok.token(eot), "<|endoftext|>");
  EXPECT_EQ(tok.token(other), "<special one>");
  EXPECT_EQ(tok.token_bytes(other), "<special one>");  // outside the byte-level alphabet: as is

  const std::string text = "Hi<|endoftext|>the <special one> end";
  const std::vector<int> allowed = tok.encode(text, /*allow_special=*/true);
  const std::vector<int> plain = tok.encode(text, /*allow_special=*/false);
  EXPECT_EQ(std::count(allowed.begin(), allowed.end(), eot), 1);
  EXPECT_EQ(std::count(allowed.begin(), allowed.end(), other), 1);
  for (const int id : plain) EXPECT_LT(id, 348) << "a special id in text encoded as plain";
  EXPECT_EQ(tok.decode(allowed), text);
  EXPECT_EQ(tok.decode(plain), text);
  // Encoded as text, the specials are the tokens of their pieces.
  std::vector<int> pieces = tok.encode("Hi");
  for (const char* part : {"<|endoftext|>", "the", " <special one>", " end"}) {
    const std::vector<int> ids = tok.encode(part);
    pieces.insert(pieces.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(plain, pieces);
}

TEST(BpeTrainer, VocabSizeBelowBytesPlusSpecialsIsAnError) {
  BpeTrainConfig config;
  config.vocab_size = 256;  // + <|endoftext|> needs 257
  try {
    train_bpe("hello", config);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab_size 256 is below 256 bytes + 1 special tokens"),
              std::string::npos)
        << e.what();
  }
  config.vocab_size = 100;
  config.special_tokens.clear();
  EXPECT_THROW(train_bpe("hello", config), Error);
  EXPECT_THROW(train_bpe_words(std::vector<BpeWordCount>{{"ab", 1}}, config), Error);
}

TEST(BpeTrainer, NoRoomOrNothingToMergeGivesNoMergesAndAClearError) {
  // Exactly 256 + specials: a valid training with no merges. The tokenizer.json loader needs at
  // least one merge, so making a tokenizer of it is an error that says so.
  BpeTrainConfig config;
  config.vocab_size = 257;
  BpeTrainResult r = train_bpe("hello hello", config);
  EXPECT_TRUE(r.merges.empty());
  EXPECT_EQ(r.vocab_size(), 257);
  EXPECT_THROW(r.tokenizer(), Error);
  // A corpus of single characters has no pair at all; an empty corpus has no words.
  config.vocab_size = 4096;
  EXPECT_TRUE(train_bpe("a\nb\nc!", config).merges.empty());
  EXPECT_TRUE(train_bpe("", config).merges.empty());
  EXPECT_EQ(train_bpe("", config).vocab_size(), 257);
  // A vocab_size far beyond the corpus costs nothing: one word of 5 bytes gives 4 merges.
  config.vocab_size = std::numeric_limits<int>::max();
  EXPECT_EQ(train_bpe("hello", config).vocab_size(), 256 + 4 + 1);
  try {
    r.tokenizer();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no merges"), std::string::npos) << e.what();
  }
}

TEST(BpeTrainer, InvalidSpecialTokensAreErrors) {
  const auto train_with = [](std::vector<std::string> specials) {
    BpeTrainConfig config;
    config.vocab_size = 300;
    config.special_tokens = std::move(specials);
    return train_bpe("some text", config);
  };
  EXPECT_THROW(train_with({""}), Error);
  EXPECT_THROW(train_with({"<|x|>", "<|x|>"}), Error);
  EXPECT_THROW(train_with({"bad \xFF"}), Error);
  EXPECT_THROW(train_with({"a"}), Error);          // the token of byte 'a'
  EXPECT_THROW(train_with({"\u0120"}), Error);     // the token of the space byte
  EXPECT_NO_THROW(train_with({"ab", "\u0120a"}));  // several bytes: only their merge is refused
  EXPECT_THROW(count_bpe_words("x", std::vector<std::string>{""}), Error);
}

TEST(BpeTrainer, IsDeterministic) {
  BpeTrainConfig config;
  config.vocab_size = 500;
  const BpeTrainResult a = train_bpe(reference().corpus, config);
  const BpeTrainResult b = train_bpe(reference().corpus, config);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.token_bytes, b.token_bytes);
  EXPECT_EQ(a.tokenizer_json(), b.tokenizer_json());
  // The order of the words does not matter either: the rules depend only on the counts.
  std::vector<BpeWordCount> words = count_bpe_words(reference().corpus, config.special_tokens);
  std::reverse(words.begin(), words.end());
  EXPECT_EQ(train_bpe_words(words, config).merges, a.merges);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
