// generate::LogitProcessor: expected logits worked out by hand from the definitions (OpenAI's
// frequency and presence penalties, logit_bias; transformers' repetition penalty) on small rows,
// and transformers' RepetitionPenaltyLogitsProcessor replicated by PyTorch
// (tools/gen_repetition_penalty_fixtures.py) bit for bit.
#include "tinylm/generate/logit_processors.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "test_util.h"

namespace tinylm::generate {
namespace TINYLM_TEST_LOCAL {

const std::vector<float> kRow = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f};

std::vector<float> processed(const LogitPenalties& p, const std::vector<int>& prompt,
                             const std::vector<int>& generated,
                             const std::vector<float>& row = kRow) {
  LogitProcessor<float> proc(p, prompt);
  for (const int t : generated) proc.accept(t);
  const std::span<const float> out = proc.apply(row);
  return {out.begin(), out.end()};
}

TEST(LogitProcessors, NeutralOptionsPassTheRowThrough) {
  LogitProcessor<float> proc(LogitPenalties{}, std::vector<int>{0, 1});
  proc.accept(3);
  EXPECT_EQ(proc.apply(kRow).data(), kRow.data());
}

TEST(LogitProcessors, FrequencyAndPresenceCountGeneratedTokensOnly) {
  LogitPenalties p;
  p.frequency = 0.5;
  p.presence = 0.25;
  // Token 3 generated twice: 3 - (0.5 * 2 + 0.25); token 1 once: -1 - (0.5 + 0.25). Token 0 is
  // in the prompt only: untouched.
  EXPECT_EQ(processed(p, {0}, {3, 1, 3}), (std::vector<float>{2.0f, -1.75f, 0.5f, 1.75f, -2.0f}));
  p.frequency = 0;
  p.presence = -1.0;  // a negative penalty favours what was generated
  EXPECT_EQ(processed(p, {0}, {3, 1, 3}), (std::vector<float>{2.0f, 0.0f, 0.5f, 4.0f, -2.0f}));
  EXPECT_EQ(processed(p, {3, 3}, {}), kRow);
}

TEST(LogitProcessors, RepetitionDividesPositiveAndMultipliesNegativeOverPromptAndGenerated) {
  LogitPenalties p;
  p.repetition = 2.0;
  // Prompt {0, 4, 4}, generated {1}: 2 / 2, -1 * 2, -2 * 2; 2 and 3 never seen.
  EXPECT_EQ(processed(p, {0, 4, 4}, {1}), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -4.0f}));
  p.repetition = 0.5;  // below 1 it favours what was seen
  EXPECT_EQ(processed(p, {3}, {}), (std::vector<float>{2.0f, -1.0f, 0.5f, 6.0f, -2.0f}));
}

TEST(LogitProcessors, BiasIsAdded) {
  LogitPenalties p;
  p.bias = {{2, -100.0}, {4, 100.0}};
  EXPECT_EQ(processed(p, {0}, {}), (std::vector<float>{2.0f, -1.0f, -99.5f, 3.0f, 98.0f}));
}

TEST(LogitProcessors, OrderIsRepetitionThenFrequencyThenBias) {
  LogitPenalties p;
  p.repetition = 2.0;
  p.frequency = 1.0;
  p.bias = {{0, 0.5}};
  // Token 0 (prompt and generated once): 2 / 2 = 1, - 1 * 1 = 0, + 0.5. (Frequency first would
  // give (2 - 1) / 2 + 0.5 = 1.)
  EXPECT_EQ(processed(p, {0}, {0})[0], 0.5f);
}

TEST(LogitProcessors, DoubleLogits) {
  LogitPenalties p;
  p.presence = 0.5;
  p.repetition = 4.0;
  LogitProcessor<double> proc(p, std::vector<int>{});
  proc.accept(1);
  const std::vector<double> row = {1.0, 2.0, -3.0};
  const std::span<const double> out = proc.apply(row);
  EXPECT_EQ(std::vector<double>(out.begin(), out.end()), (std::vector<double>{1.0, 0.0, -3.0}));
}

TEST(LogitProcessors, ValidateNamesTheOption) {
  const auto bad = [](auto set, const char* phrase) {
    LogitPenalties p;
    set(p);
    test::expect_error([&] { p.validate(5); }, {phrase});
  };
  bad([](LogitPenalties& p) { p.frequency = 2.5; }, "frequency penalty must be in [-2, 2]");
  bad([](LogitPenalties& p) { p.presence = -2.01; }, "presence penalty must be in [-2, 2]");
  bad([](LogitPenalties& p) { p.repetition = 0; }, "repetition penalty must be > 0");
  bad([](LogitPenalties& p) { p.bias = {{5, 1.0}}; }, "token id 5 is outside the vocabulary");
  bad([](LogitPenalties& p) { p.bias = {{1, -101.0}}; }, "must be in [-100, 100]");
  LogitPenalties ok;
  ok.frequency = -2;
  ok.presence = 2;
  ok.repetition = 0.01;
  ok.bias = {{4, 100.0}};
  EXPECT_NO_THROW(ok.validate(5));
}

std::vector<float> floats_of(const nlohmann::json& bits) {
  std::vector<float> out;
  for (const auto& b : bits) out.push_back(std::bit_cast<float>(b.get<uint32_t>()));
  return out;
}

TEST(LogitProcessors, RepetitionMatchesTransformersBitForBit) {
  const auto j = nlohmann::json::parse(test::read_text(
      test::source_path("tests/fixtures/logit_processors/repetition_penalty.json")));
  ASSERT_GE(j["cases"].size(), 5u);
  for (const auto& c : j["cases"]) {
    LogitPenalties p;
    p.repetition = c["penalty"].get<double>();
    const std::vector<int> ids = c["ids"].get<std::vector<int>>();
    const std::vector<float> logits = floats_of(c["logits_bits"]);
    const std::vector<float> expected = floats_of(c["expected_bits"]);
    const std::vector<float> got = processed(p, ids, {}, logits);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(expected[i]))
          << "penalty " << p.repetition << ", token " << i << ": " << got[i] << " vs "
          << expected[i];
    }
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::generate
