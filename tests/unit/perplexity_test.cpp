// Perplexity through the decode interface (generate/perplexity.h), held to plain loops over an
// EvermindLM model's own full forward: -log softmax of each scored position's logits.
#include "tinylm/generate/perplexity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tinylm/models/evermind/model.h"

namespace tinylm::generate {
namespace TINYLM_TEST_LOCAL {

constexpr int64_t kVocab = 61;

evermind::Config small_config() {
  return {.vocab_size = kVocab, .d_model = 24, .n_layers = 2, .hidden_dim = 40};
}

std::vector<int> random_tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(kVocab) - 1);
  std::vector<int> out(n);
  for (int& t : out) t = pick(rng);
  return out;
}

// -log softmax(row)[target], in double.
double nll(const float* row, int target) {
  const double top = *std::max_element(row, row + kVocab);
  double sum = 0;
  for (int64_t v = 0; v < kVocab; ++v) sum += std::exp(static_cast<double>(row[v]) - top);
  return top + std::log(sum) - row[target];
}

// The score of tokens[j] after tokens[begin..j), from the full forward of that prefix.
double score(evermind::Model<float>& m, const std::vector<int>& tokens, size_t begin, size_t j) {
  const std::span<const int> prefix(tokens.data() + begin, j - begin);
  std::vector<float> logits(prefix.size() * kVocab);
  m.logits(prefix, logits);
  return nll(logits.data() + (prefix.size() - 1) * kVocab, tokens[j]);
}

TEST(Perplexity, OneWindowIsTheMeanOverTheFullForward) {
  evermind::Model<float> m(small_config(), 64);
  m.init(5);
  m.pack();  // the decoder reads the packed weights
  const std::vector<int> tokens = random_tokens(40, 1);
  // Every position's logits from one forward over all but the last token.
  std::vector<float> logits((tokens.size() - 1) * kVocab);
  m.logits(std::span(tokens).first(tokens.size() - 1), logits);
  double sum = 0;
  for (size_t j = 1; j < tokens.size(); ++j)
    sum += nll(logits.data() + (j - 1) * kVocab, tokens[j]);
  const std::unique_ptr<DecodeBackend> backend = evermind_backend(m);
  const PerplexityResult r = perplexity(*backend, tokens, 40, 40);
  EXPECT_EQ(r.count, 39);
  EXPECT_EQ(r.forward_tokens, 39);
  EXPECT_NEAR(r.mean_nll(), sum / 39.0, 1e-6);
  EXPECT_NEAR(r.perplexity(), std::exp(sum / 39.0), 1e-4);
}

// Hugging Face's windows: window k starts at k * stride and scores the targets after the
// previous window's end, each with the window's tokens before it as its context.
TEST(Perplexity, SlidingWindowsScoreEachTokenOnceWithItsWindowsContext) {
  evermind::Model<float> m(small_config(), 64);
  m.init(7);
  m.pack();  // the decoder reads the packed weights
  const std::vector<int> tokens = random_tokens(45, 2);
  const size_t context = 16, stride = 6;
  double sum = 0;
  int64_t count = 0;
  size_t prev_end = 0;
  for (size_t begin = 0;; begin += stride) {
    const size_t end = std::min(begin + context, tokens.size());
    for (size_t j = std::max(prev_end, begin + 1); j < end; ++j, ++count)
      sum += score(m, tokens, begin, j);
    prev_end = end;
    if (end == tokens.size()) break;
  }
  const std::unique_ptr<DecodeBackend> backend = evermind_backend(m);
  int64_t windows = 0, last = 0;
  const PerplexityResult r =
      perplexity(*backend, tokens, context, stride, [&](int64_t scored, int64_t total) {
        ++windows;
        last = scored;
        EXPECT_EQ(total, 44);
      });
  EXPECT_EQ(count, 44);
  EXPECT_EQ(r.count, count);
  EXPECT_EQ(last, 44);
  EXPECT_EQ(windows, 6);  // windows begin at 0, 6, ..., 30 (whose end is the text's)
  EXPECT_NEAR(r.nll_sum, sum, 1e-5);
}

TEST(Perplexity, RefusesBadWindowsAndTokens) {
  evermind::Model<float> m(small_config(), 64);
  m.init(1);
  m.pack();  // the decoder reads the packed weights
  const std::unique_ptr<DecodeBackend> backend = evermind_backend(m);
  const std::vector<int> tokens = random_tokens(10, 3);
  EXPECT_THROW(perplexity(*backend, tokens, 1, 1), Error);
  EXPECT_THROW(perplexity(*backend, tokens, 8, 9), Error);
  EXPECT_THROW(perplexity(*backend, std::span(tokens).first(1), 8, 4), Error);
  std::vector<int> bad = tokens;
  bad[4] = static_cast<int>(kVocab);
  EXPECT_THROW(perplexity(*backend, bad, 8, 4), Error);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::generate
