// GPT-2 BPE against golden ids: tests/fixtures/bpe/gpt2_goldens.jsonl holds one case per
// line, {"name", "bytes_hex", "ids", "decoded_hex"}, produced by a reference encoder from
// the input bytes (invalid UTF-8 replaced by U+FFFD first, as encode does). Every case's ids
// must be identical, and decoding them must give decoded_hex. Skipped when the fixture or the
// vocabulary (data/gpt2/) is absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

struct Golden {
  std::string name;
  std::string bytes;
  std::vector<int> ids;
  std::string decoded;
};

std::vector<Golden> read_goldens(const std::string& path) {
  std::vector<Golden> out;
  const std::string text = test::read_text(path);
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line);
    Golden g;
    g.name = j.value("name", "line " + std::to_string(line_no));
    g.bytes = from_hex(j.at("bytes_hex").get<std::string>());
    g.ids = j.at("ids").get<std::vector<int>>();
    g.decoded = from_hex(j.at("decoded_hex").get<std::string>());
    out.push_back(std::move(g));
  }
  return out;
}

void check_goldens(const BpeTokenizer& t, const std::vector<Golden>& goldens) {
  size_t failures = 0;
  for (const Golden& g : goldens) {
    const std::vector<int> ids = t.encode(g.bytes);
    const bool ok_ids = ids == g.ids;
    const std::string decoded = t.decode(g.ids);
    const bool ok_decoded = decoded == g.decoded;
    if ((!ok_ids || !ok_decoded) && ++failures <= 20) {
      ADD_FAILURE() << g.name << " (input " << to_hex(g.bytes).substr(0, 200)
                    << "): " << (ok_ids ? "" : "ids differ ")
                    << (ok_decoded ? "" : "decode differs: " + to_hex(decoded).substr(0, 200));
    }
  }
  EXPECT_EQ(failures, 0u) << "of " << goldens.size() << " cases";
}

const char* kFixture = "tests/fixtures/bpe/gpt2_goldens.jsonl";

bool have(const char* rel) { return std::filesystem::exists(test::source_path(rel)); }

// Loaded once for all tests (parsing encoder.json is the slow part).
const BpeTokenizer& gpt2() {
  static const BpeTokenizer t = BpeTokenizer::from_vocab_and_merges(
      test::source_path("data/gpt2/encoder.json"), test::source_path("data/gpt2/vocab.bpe"));
  return t;
}

TEST(BpeGolden, Gpt2EncoderJsonAndVocabBpe) {
  if (!have(kFixture) || !have("data/gpt2/encoder.json") || !have("data/gpt2/vocab.bpe")) {
    GTEST_SKIP() << kFixture << " or data/gpt2/{encoder.json,vocab.bpe} not present";
  }
  const std::vector<Golden> goldens = read_goldens(test::source_path(kFixture));
  ASSERT_FALSE(goldens.empty());
  check_goldens(gpt2(), goldens);
}

// The cases where JavaScript's \s (which tinylm follows) and Unicode White_Space part ways
// (U+FEFF, U+0085): the "ids" column is the JavaScript answer, "reference_ids" the other.
TEST(BpeGolden, Gpt2JavaScriptWhitespaceDivergences) {
  const char* fixture = "tests/fixtures/bpe/gpt2_js_whitespace_divergences.jsonl";
  if (!have(fixture) || !have("data/gpt2/encoder.json") || !have("data/gpt2/vocab.bpe")) {
    GTEST_SKIP() << fixture << " or data/gpt2/{encoder.json,vocab.bpe} not present";
  }
  const std::vector<Golden> goldens = read_goldens(test::source_path(fixture));
  ASSERT_FALSE(goldens.empty());
  check_goldens(gpt2(), goldens);
}

// The same cases through the other vocabulary files, where data/gpt2/ has them too.
TEST(BpeGolden, Gpt2OtherFileForms) {
  if (!have(kFixture)) GTEST_SKIP() << kFixture << " not present";
  const std::vector<Golden> goldens = read_goldens(test::source_path(kFixture));
  bool any = false;
  if (have("data/gpt2/tokenizer.json")) {
    any = true;
    check_goldens(BpeTokenizer::from_tokenizer_json(test::source_path("data/gpt2/tokenizer.json")),
                  goldens);
  }
  if (have("data/gpt2/vocab.json") && have("data/gpt2/merges.txt")) {
    any = true;
    check_goldens(BpeTokenizer::from_vocab_and_merges(test::source_path("data/gpt2/vocab.json"),
                                                      test::source_path("data/gpt2/merges.txt")),
                  goldens);
  }
  if (!any) GTEST_SKIP() << "no data/gpt2/tokenizer.json nor vocab.json + merges.txt";
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
