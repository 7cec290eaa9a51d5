// microgpt against independent reference values: the figures given in the foundation issue
// and the full vectors written by tools/microgpt_reference.py (pure Python, CPython floats).
// Both engines run through the public API. The scalar engine must match bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "finite_difference.h"
#include "test_util.h"
#include "tinylm/io/text_file.h"
#include "tinylm/models/microgpt/model.h"
#include "tinylm/optim/adam.h"
#include "tinylm/tokenizers/char_tokenizer.h"

namespace tinylm::microgpt {
namespace TINYLM_TEST_LOCAL {

std::vector<double> parse_doubles(const nlohmann::json& j) {
  std::vector<double> out;
  for (const auto& s : j) out.push_back(std::strtod(s.get<std::string>().c_str(), nullptr));
  return out;
}

class MicrogptReference : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    model_ = make_model(Config{}, GetParam());
    set_deterministic_weights();
  }
  void set_deterministic_weights() {
    std::span<double> p = model_->params();
    for (size_t i = 0; i < p.size(); ++i)
      p[i] = 0.08 * std::sin(0.37 * static_cast<double>(i) + 0.11);
  }
  std::vector<int> encode(const std::string& doc) { return tok_.encode_document(doc); }
  bool exact() const { return GetParam() == Engine::scalar; }
  void expect_close(double got, double want, const std::string& what) {
    if (exact()) {
      EXPECT_EQ(got, want) << what;
    } else {
      EXPECT_NEAR(got, want, 1e-9 * std::abs(want) + 1e-15) << what;
    }
  }

  CharTokenizer tok_ = CharTokenizer::from_chars("abcdefghijklmnopqrstuvwxyz");
  std::unique_ptr<Model> model_;
};

TEST_P(MicrogptReference, ShapesAndCounts) {
  EXPECT_EQ(tok_.vocab_size(), 27);
  EXPECT_EQ(model_->params().size(), 4192u);
  EXPECT_EQ(encode("emma"), (std::vector<int>{26, 4, 12, 12, 0, 26}));
}

// Figures quoted in the issue (made with microgpt.py), relative tolerance 1e-9.
TEST_P(MicrogptReference, IssueLossAndGradients) {
  const double loss = model_->loss_and_grad(encode("emma"));
  EXPECT_NEAR(loss, 3.506449207715624, 1e-9 * 3.5);
  const std::pair<int, double> want[] = {
      {64, 0.5013475135105153},      {432, -0.10409231751964869},    {700, 0.12256221981304923},
      {1200, -0.003786914738571059}, {1500, -0.0012771713881593858}, {1700, 0.015920736906842876},
      {2000, 0.018551333841752494},  {2500, -0.0005752369491939385}, {4191, 0.014184402670265658}};
  for (const auto& [i, g] : want) {
    EXPECT_NEAR(model_->grads()[i], g, 1e-9 * std::abs(g)) << "gradient index " << i;
  }
}

TEST_P(MicrogptReference, IssueAdamTrajectory) {
  optim::Adam<double> adam(model_->params().size(), {0.85, 0.99, 1e-8, 0.0});
  const char* docs[] = {"emma", "olivia", "ava", "isabella", "sophia"};
  const double want[] = {3.506449207715624, 3.2498071277112257, 2.7546668273691433,
                         3.496728826446422, 3.056047453583676};
  for (int step = 0; step < 5; ++step) {
    const double loss = model_->loss_and_grad(encode(docs[step]));
    EXPECT_NEAR(loss, want[step], 1e-9 * want[step]) << "step " << step;
    adam.step(model_->params(), model_->grads(), 0.01 * (1 - step / 1000.0), step + 1);
  }
  EXPECT_NEAR(model_->params()[0], -0.00267390585765643, 1e-9 * 0.00267390585765643);
}

// Every gradient and every parameter after the Adam steps, from tools/microgpt_reference.py.
TEST_P(MicrogptReference, FullVectorsFromPythonReference) {
  const nlohmann::json ref = nlohmann::json::parse(
      test::read_text(test::source_path("tests/fixtures/microgpt/reference_values.json")));
  const std::vector<double> grad = parse_doubles(ref["grad_emma"]);
  ASSERT_EQ(grad.size(), 4192u);
  expect_close(model_->loss_and_grad(encode("emma")),
               std::strtod(ref["loss_emma"].get<std::string>().c_str(), nullptr), "loss");
  for (size_t i = 0; i < grad.size(); ++i) {
    expect_close(model_->grads()[i], grad[i], "gradient " + std::to_string(i));
  }
  model_->zero_grads();
  optim::Adam<double> adam(model_->params().size(), {0.85, 0.99, 1e-8, 0.0});
  const std::vector<double> losses = parse_doubles(ref["adam_losses"]);
  int step = 0;
  for (const auto& d : ref["adam_docs"]) {
    expect_close(model_->loss_and_grad(encode(d.get<std::string>())), losses[step],
                 "adam loss " + std::to_string(step));
    adam.step(model_->params(), model_->grads(), 0.01 * (1 - step / 1000.0), step + 1);
    ++step;
  }
  const std::vector<double> after = parse_doubles(ref["params_after_adam"]);
  for (size_t i = 0; i < after.size(); ++i) {
    expect_close(model_->params()[i], after[i], "parameter " + std::to_string(i));
  }
}

TEST_P(MicrogptReference, EmptyDocumentAndLoneBos) {
  const int bos = tok_.bos();
  const double empty = model_->loss_and_grad(std::vector<int>{bos, bos});
  EXPECT_GT(empty, 0.0);
  EXPECT_TRUE(std::isfinite(empty));
  model_->zero_grads();
  EXPECT_EQ(model_->loss_and_grad(std::vector<int>{bos}), 0.0);
  for (double g : model_->grads()) ASSERT_EQ(g, 0.0);
}

TEST_P(MicrogptReference, RejectsOutOfVocabularyTokens) {
  EXPECT_THROW(model_->loss(std::vector<int>{26, 27, 26}), Error);
  EXPECT_THROW(model_->loss(std::vector<int>{26, -1, 26}), Error);
  EXPECT_THROW(tok_.encode_document("emma!"), Error);
}

// Central finite differences in double on a spread of parameters from every tensor.
TEST_P(MicrogptReference, GradientsMatchFiniteDifferences) {
  const std::vector<int> tokens = encode("isabella");
  model_->loss_and_grad(tokens);
  const std::vector<double> grad(model_->grads().begin(), model_->grads().end());
  const auto f = [&] { return model_->loss(tokens); };
  size_t checked = 0;
  for (const ParamEntry& e : model_->layout().entries()) {
    checked += test::expect_gradient(
                   f, model_->params(), grad, {.abs = 1e-7, .rel = 1e-5}, e.name,
                   {.begin = e.offset, .end = e.offset + e.numel, .stride = 7 + e.numel / 40})
                   .checked;
  }
  EXPECT_GT(checked, 200u);
}

// A longer document than block_size uses only the first block_size transitions, and a
// multi-layer, non-default configuration stays consistent between engines.
TEST(MicrogptEngines, AgreeOnNonDefaultConfigurations) {
  const Config c{27, 12, 3, 2, 6};
  auto tensor = make_model(c, Engine::tensor);
  auto scalar = make_model(c, Engine::scalar);
  for (size_t i = 0; i < tensor->params().size(); ++i) {
    tensor->params()[i] = scalar->params()[i] = 0.1 * std::cos(0.731 * static_cast<double>(i));
  }
  const CharTokenizer tok = CharTokenizer::from_chars("abcdefghijklmnopqrstuvwxyz");
  const std::vector<int> tokens = tok.encode_document("christopher");  // 12 transitions > 6
  const double lt = tensor->loss_and_grad(tokens);
  const double ls = scalar->loss_and_grad(tokens);
  EXPECT_EQ(lt, ls);  // the forward is the same arithmetic in both engines
  for (size_t i = 0; i < tensor->grads().size(); ++i) {
    ASSERT_NEAR(tensor->grads()[i], scalar->grads()[i],
                1e-12 + 1e-10 * std::abs(scalar->grads()[i]))
        << "gradient " << i;
  }
}

// The KV-cached decode path sees the same logits as the batched forward: the loss rebuilt
// from next_probs (temperature 1) equals loss().
TEST_P(MicrogptReference, CachedDecodeMatchesFullForward) {
  const std::vector<int> tokens = encode("sophia");
  const double full = model_->loss(tokens);
  model_->start_sequence();
  double sum = 0.0;
  const size_t n = tokens.size() - 1;
  for (size_t t = 0; t < n; ++t) {
    const std::span<const double> probs = model_->next_probs(tokens[t], 1.0);
    sum += std::log(probs[tokens[t + 1]]) * -1.0;
  }
  EXPECT_EQ(sum * (1.0 / static_cast<double>(n)), full);
}

TEST_P(MicrogptReference, DecodePastBlockSizeIsAnError) {
  model_->start_sequence();
  for (int t = 0; t < 16; ++t) model_->next_probs(0, 1.0);
  EXPECT_THROW(model_->next_probs(0, 1.0), Error);
}

INSTANTIATE_TEST_SUITE_P(Engines, MicrogptReference,
                         ::testing::Values(Engine::tensor, Engine::scalar),
                         [](const auto& param_info) {
                           return std::string(engine_name(param_info.param));
                         });

TEST(MicrogptConfig, RejectsInvalidConfigurations) {
  EXPECT_THROW(make_model(Config{27, 16, 3, 1, 16}, Engine::tensor), Error);  // 16 % 3
  EXPECT_THROW(make_model(Config{27, 0, 4, 1, 16}, Engine::tensor), Error);
  EXPECT_THROW(make_model(Config{27, 16, 4, 0, 16}, Engine::scalar), Error);
  EXPECT_THROW(make_model(Config{27, 16, 4, 1, -1}, Engine::tensor), Error);
  EXPECT_THROW(make_model(Config{0, 16, 4, 1, 16}, Engine::tensor), Error);
  EXPECT_THROW(parse_engine("vector"), Error);
}

TEST(MicrogptConfig, ParameterLayoutIsMicrogptOrder) {
  const ParamLayout L = param_layout(Config{});
  const char* names[] = {"wte",
                         "wpe",
                         "lm_head",
                         "layer0.attn_wq",
                         "layer0.attn_wk",
                         "layer0.attn_wv",
                         "layer0.attn_wo",
                         "layer0.mlp_fc1",
                         "layer0.mlp_fc2"};
  ASSERT_EQ(L.entries().size(), 9u);
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(L.entries()[i].name, names[i]);
  EXPECT_EQ(L.at("layer0.mlp_fc1").shape, (Shape{64, 16}));
  EXPECT_EQ(L.at("layer0.mlp_fc2").shape, (Shape{16, 64}));
  EXPECT_EQ(L.size(), 4192u);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::microgpt
