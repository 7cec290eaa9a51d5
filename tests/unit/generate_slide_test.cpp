// generate()'s --slide past the context's end, on a stand-in backend whose next token is a hash
// of everything its sequence holds: each token must be the hash of exactly the last `context`
// tokens before it (nanoGPT's sample.py crop), and a sequence never holds more than `context`.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tinylm/generate/decode_backend.h"
#include "tinylm/generate/generate.h"
#include "tinylm/generate/sampler.h"

namespace tinylm::generate {
namespace TINYLM_TEST_LOCAL {

constexpr int kVocab = 97, kContext = 8;

int hash_of(std::span<const int> tokens) {
  uint64_t h = 1469598103934665603ull;
  for (const int t : tokens) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return static_cast<int>(h % kVocab);
}

struct Held : Sequence {
  std::vector<int> tokens;
  int capacity = 0;
};

class HashBackend final : public DecodeBackend {
 public:
  int vocab_size() const override { return kVocab; }
  int context_limit() const override { return kContext; }
  std::unique_ptr<Sequence> start(int capacity, std::unique_ptr<Sequence>) const override {
    auto s = std::make_unique<Held>();
    s->capacity = capacity;
    return s;
  }
  void feed(Sequence& seq, std::span<const int> tokens, std::span<float> logits) override {
    auto& held = static_cast<Held&>(seq);
    held.tokens.insert(held.tokens.end(), tokens.begin(), tokens.end());
    EXPECT_LE(static_cast<int>(held.tokens.size()), held.capacity) << "fed past its capacity";
    std::fill(logits.begin(), logits.end(), 0.0f);
    logits[static_cast<size_t>(hash_of(held.tokens))] = 1.0f;  // greedy draws the hash
  }
  void step(std::span<Sequence* const>, std::span<const int>, std::span<float>) override {}
  std::unique_ptr<TokenSampler<float>> sampler(const SamplingOptions& options) const override {
    return std::make_unique<Sampler>(options);
  }
};

TEST(GenerateSlide, EachTokenSeesExactlyTheLastContextTokens) {
  HashBackend backend;
  const std::vector<int> prompt = {5, 17, 42};
  GenerateOptions options;
  options.max_tokens = 30;
  options.slide = true;
  const GenerateResult r = generate(backend, prompt, options);
  ASSERT_EQ(r.ids.size(), 30u);
  EXPECT_FALSE(r.hit_context_end);
  std::vector<int> all = prompt;
  for (const int id : r.ids) {
    const size_t from = all.size() > kContext ? all.size() - kContext : 0;
    EXPECT_EQ(id, hash_of(std::span(all).subspan(from))) << "token " << all.size();
    all.push_back(id);
  }
  // Without --slide the context's end stops it.
  options.slide = false;
  const GenerateResult stopped = generate(backend, prompt, options);
  EXPECT_TRUE(stopped.hit_context_end);
  EXPECT_EQ(stopped.ids.size(), static_cast<size_t>(kContext - prompt.size() + 1));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::generate
