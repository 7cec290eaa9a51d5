// microgpt's float decode interface (generate and serve): sequences that take turns in the
// model's one cache give the rows each gives alone, and a sampler handed a float row draws what
// microgpt.py's choices draw from the double row, with the RNG advanced as `tinylm microgpt
// --load` advances it.
#include <gtest/gtest.h>

#include <vector>

#include "tinylm/core/py_random.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/models/microgpt/model.h"

namespace tinylm::generate {
namespace TINYLM_TEST_LOCAL {

std::unique_ptr<microgpt::Model> random_model(const microgpt::Config& c) {
  std::unique_ptr<microgpt::Model> m = microgpt::make_model(c, microgpt::Engine::tensor);
  PyRandom rng(1);
  for (double& p : m->params()) p = rng.gauss(0.0, 0.3);
  return m;
}

// The double logits after `tokens`, from the model itself.
std::vector<double> logits_of(microgpt::Model& m, const std::vector<int>& tokens) {
  m.start_sequence();
  std::span<const double> last;
  for (const int t : tokens) last = m.next_logits(t);
  return {last.begin(), last.end()};
}

TEST(MicrogptBackend, SequencesTakingTurnsGiveTheirOwnRows) {
  const microgpt::Config c;
  const std::unique_ptr<microgpt::Model> m = random_model(c);
  const std::vector<double> ab = logits_of(*m, {26, 3, 5}), b = logits_of(*m, {26, 7});
  const auto backend = microgpt_backend(*m, MicrogptReplay{});
  const size_t V = static_cast<size_t>(backend->vocab_size());
  EXPECT_EQ(backend->context_limit(), c.block_size);
  std::vector<float> rows(2 * V);
  auto first = backend->start(c.block_size, nullptr),
       second = backend->start(c.block_size, nullptr);
  const std::vector<int> prompt = {26, 3};
  backend->feed(*first, prompt, std::span(rows).first(V));
  backend->feed(*second, std::vector<int>{26}, std::span(rows).first(V));
  // One step for both: the first continues after the second used the cache.
  Sequence* both[] = {first.get(), second.get()};
  backend->step(both, std::vector<int>{5, 7}, rows);
  for (size_t v = 0; v < V; ++v) {
    EXPECT_EQ(rows[v], static_cast<float>(ab[v])) << v;
    EXPECT_EQ(rows[V + v], static_cast<float>(b[v])) << v;
  }
}

TEST(MicrogptBackend, SamplerDrawsFromTheDoubleRowWithTheReplayedRng) {
  const microgpt::Config c;
  // The backend's model, and the same weights for the expected rows (the backend keeps its
  // sequences in its model's cache: nothing else may use it).
  const std::unique_ptr<microgpt::Model> m = random_model(c), same = random_model(c);
  const MicrogptReplay replay{.documents = 12, .params = 40};
  const auto backend = microgpt_backend(*m, replay);
  const size_t V = static_cast<size_t>(backend->vocab_size());
  for (const uint64_t seed : {0u, 5u, 42u}) {
    SamplingOptions o;
    o.temperature = 0.9;
    o.seed = seed;
    const auto sampler = backend->sampler(o);
    // microgpt --load's RNG: seeded, a shuffle of 12 documents, 40 init draws, then choices.
    PyRandom rng(seed);
    std::vector<size_t> docs(12);
    rng.shuffle(std::span(docs));
    for (int i = 0; i < 40; ++i) rng.gauss(0.0, 0.08);
    std::vector<int> tokens = {26};
    auto seq = backend->start(c.block_size, nullptr);
    std::vector<float> row(V);
    backend->feed(*seq, tokens, row);
    for (int step = 0; step < 6; ++step) {
      const std::vector<double> logits = logits_of(*same, tokens);
      std::vector<double> probs(V);
      microgpt::softmax_at_temperature(logits, 0.9, probs);
      const int expected = static_cast<int>(rng.choices(probs));
      ASSERT_EQ(sampler->sample(row), expected) << "seed " << seed << ", step " << step;
      tokens.push_back(expected);
      backend->feed(*seq, std::span(&tokens.back(), 1), row);
    }
  }
  // A row no feed wrote (here, maybe at the address of one that was freed) is refused rather
  // than drawn from as floats.
  std::vector<float> stranger(V, 0.0f);
  EXPECT_THROW(backend->sampler({})->sample(stranger), Error);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::generate
