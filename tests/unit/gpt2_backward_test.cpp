// The whole GPT-2 backward in double precision against central finite differences (the
// kernels' own gradient checks are in the ops_*_test.cpp table).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "finite_difference.h"
#include "tinylm/models/gpt2/trainer.h"

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

// The whole model, double precision, every parameter: a tiny config (vocab 11, 8 positions,
// n_embd 8, 2 layers, 2 heads, n_inner 12), batch 2 x 5, with and without dropout (the same
// key every forward, so the masks are fixed and the loss is smooth).
class Gpt2WholeModel : public ::testing::TestWithParam<float> {};

TEST_P(Gpt2WholeModel, EveryParameterGradientMatchesFiniteDifferences) {
  Config config;
  config.vocab_size = 11;
  config.n_positions = 8;
  config.n_embd = 8;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_inner = 12;
  BasicTrainer<double> trainer(config, {.batch_size = 2, .seq_len = 5, .dropout = GetParam()});
  const ParamLayout& layout = trainer.layout();
  std::vector<double> params(layout.size());
  {
    std::mt19937_64 rng(18);
    std::normal_distribution<double> n01(0.0, 1.0);
    for (const ParamEntry& e : layout.entries()) {
      const bool ln_gain = e.name.find("ln_") != std::string::npos && e.name.ends_with(".weight");
      for (size_t i = 0; i < e.numel; ++i) {
        params[e.offset + i] = ln_gain ? 1.0 + 0.2 * n01(rng) : 0.3 * n01(rng);
      }
    }
  }
  const std::vector<int32_t> inputs = {1, 4, 10, 4, 0, 7, 7, 2, 9, 3};
  const std::vector<int32_t> targets = {4, 10, 4, 0, 6, 7, 2, 9, 3, 3};
  const DropoutKey key{99, 5};
  const auto f = [&] { return trainer.forward(params, inputs, targets, key); };
  f();
  std::vector<double> grads(layout.size(), 0.0);
  trainer.backward(grads);
  test::expect_gradient(f, params, grads, 1e-7, "all parameters");
  // accumulation: a second backward adds the same gradient again
  std::vector<double> twice = grads;
  f();
  trainer.backward(twice);
  for (size_t i = 0; i < grads.size(); ++i)
    ASSERT_NEAR(twice[i], 2 * grads[i], 1e-12 * (1 + std::abs(grads[i])));
}

INSTANTIATE_TEST_SUITE_P(Dropout, Gpt2WholeModel, ::testing::Values(0.0f, 0.3f));

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
