// EvermindLM model: central-difference gradient checks in double for every parameter
// group, activation checkpointing bit for bit, incremental decoding against full
// recomputation, the same bits at every kernel level, initialization and config errors. The
// kernels themselves are checked in the ops_*_test.cpp table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "finite_difference.h"
#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/philox.h"
#include "tinylm/core/py_random.h"
#include "tinylm/core/utf8.h"
#include "tinylm/generate/generate.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/models/evermind/decoder.h"
#include "tinylm/models/evermind/init.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::evermind {
namespace TINYLM_TEST_LOCAL {

Config small_config(int64_t top_k) {
  Config c;
  c.vocab_size = 11;
  c.d_model = 8;
  c.n_layers = 2;
  c.conv_kernel = 3;
  c.hidden_dim = 12;
  c.n_experts = 4;
  c.top_k = top_k;
  c.seed = 7;
  return c;
}

// Moves every parameter away from its (very regular) initial value: conv taps and gains
// that are not 0/1, a router with clearly separated probabilities, larger FFN weights.
template <class T>
void perturb(Model<T>& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  for (const ParamEntry& e : m.layout().entries()) {
    double scale = 0.3, base = 0.0;
    if (e.name.ends_with("norm")) base = 1.0;
    if (e.name.ends_with("router")) scale = 0.25;
    if (e.name == "emb") scale = 0.7;
    for (size_t i = 0; i < e.numel; ++i)
      m.params()[e.offset + i] = static_cast<T>(base + scale * n(rng));
  }
}

std::vector<int> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> t(static_cast<size_t>(n));
  for (int& x : t) x = static_cast<int>(rng() % static_cast<uint64_t>(vocab));
  return t;
}

struct GradCase {
  int64_t top_k;
  double aux_coef;
  bool checkpoint;
  uint64_t seed;  // of the perturbed weights; chosen so that every expert gets some tokens
};

class EvermindGradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(EvermindGradCheck, CentralDifferencesMatchEveryParameter) {
  const GradCase gc = GetParam();
  const Config c = small_config(gc.top_k);
  Model<double> m(c, 32);
  perturb(m, gc.seed);
  const std::vector<int> tokens = random_tokens(24, c.vocab_size, 99);
  PassOptions opt;
  opt.aux_loss_coef = gc.aux_coef;
  opt.checkpoint_activations = gc.checkpoint;
  m.zero_grads();
  const Loss l = m.forward_backward(tokens, opt);
  ASSERT_EQ(l.positions, 23);
  ASSERT_GT(l.aux, 0.0);
  const std::vector<double> analytic(m.grads().begin(), m.grads().end());
  const auto f = [&] { return m.loss(tokens, gc.aux_coef).total; };
  for (const ParamEntry& e : m.layout().entries()) {
    const test::GradientReport r =
        test::expect_gradient(f, m.params(), analytic, {.abs = 1e-8, .of_max = 1e-6}, e.name,
                              {.begin = e.offset, .end = e.offset + e.numel});
    // With top_k = 1 the renormalized gate is 1 whatever p is: without the aux loss the
    // router gets no gradient at all (correctly).
    if (!(gc.top_k == 1 && gc.aux_coef == 0.0 && e.name.ends_with("router"))) {
      EXPECT_GT(r.max_analytic, 0.0) << e.name << " has an all-zero gradient";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, EvermindGradCheck,
                         ::testing::Values(GradCase{2, 0.01, false, 1}, GradCase{2, 0.0, false, 2},
                                           GradCase{2, 0.5, true, 3}, GradCase{1, 0.3, false, 5},
                                           GradCase{1, 0.0, true, 5}, GradCase{4, 0.3, false, 6},
                                           GradCase{4, 0.0, false, 7}));

Config default_config(int64_t vocab) {
  Config c;
  c.vocab_size = vocab;
  c.seed = 3;
  return c;
}

TEST(EvermindModel, CheckpointedGradientsEqualPlainBitForBit) {
  test::for_each_isa([](kernels::Isa) {
    for (int64_t top_k : {1, 2, 4}) {
      Config c = default_config(97);
      c.top_k = top_k;
      c.d_model = 48;  // not a multiple of the vector width: exercises the partial lanes
      c.hidden_dim = 72;
      c.n_layers = 3;
      Model<float> m(c, 128);
      perturb(m, 11);
      const std::vector<int> tokens = random_tokens(100, c.vocab_size, 5);
      PassOptions plain, ckpt;
      plain.aux_loss_coef = ckpt.aux_loss_coef = 0.05;
      ckpt.checkpoint_activations = true;
      m.zero_grads();
      const Loss a = m.forward_backward(tokens, plain);
      const std::vector<float> g_plain(m.grads().begin(), m.grads().end());
      m.zero_grads();
      const Loss b = m.forward_backward(tokens, ckpt);
      EXPECT_EQ(a.total, b.total);
      EXPECT_EQ(a.aux, b.aux);
      ASSERT_EQ(g_plain.size(), m.grads().size());
      EXPECT_EQ(0, std::memcmp(g_plain.data(), m.grads().data(), g_plain.size() * sizeof(float)))
          << "top_k " << top_k;
    }
  });
}

TEST(EvermindModel, FloatGradientsAgreeWithDouble) {
  // The double gradient is checked against finite differences above; the float path runs
  // the same code with vectorized exp/tanh and must agree to float precision.
  Config c = default_config(50);
  c.d_model = 24;
  c.hidden_dim = 40;
  Model<double> md(c, 64);
  Model<float> mf(c, 64);
  perturb(md, 21);
  for (size_t i = 0; i < md.params().size(); ++i)
    mf.params()[i] = static_cast<float>(md.params()[i]);
  const std::vector<int> tokens = random_tokens(40, c.vocab_size, 8);
  md.zero_grads();
  mf.zero_grads();
  const Loss ld = md.forward_backward(tokens);
  const Loss lf = mf.forward_backward(tokens);
  EXPECT_NEAR(ld.total, lf.total, 1e-5 * std::fabs(ld.total));
  for (const ParamEntry& e : md.layout().entries()) {
    double worst = 0.0, norm = 0.0;
    for (size_t i = 0; i < e.numel; ++i) {
      worst = std::max(worst, std::fabs(md.grads()[e.offset + i] - mf.grads()[e.offset + i]));
      norm = std::max(norm, std::fabs(md.grads()[e.offset + i]));
    }
    EXPECT_LT(worst, 1e-4 * norm + 1e-9) << e.name;
  }
}

TEST(EvermindModel, LossIsMeanCrossEntropyPlusAux) {
  Config c = default_config(31);
  c.d_model = 16;
  c.hidden_dim = 32;
  Model<double> m(c, 32);
  perturb(m, 4);
  const std::vector<int> tokens = random_tokens(20, c.vocab_size, 1);
  std::vector<double> logits(tokens.size() * 31);
  m.logits(tokens, logits);
  double ce = 0.0;  // recomputed from the logits, independently of the fused kernel
  for (size_t t = 0; t + 1 < tokens.size(); ++t) {
    const double* l = logits.data() + t * 31;
    double mx = l[0], sum = 0.0;
    for (int v = 1; v < 31; ++v) mx = std::max(mx, l[v]);
    for (int v = 0; v < 31; ++v) sum += std::exp(l[v] - mx);
    ce += std::log(sum) + mx - l[tokens[t + 1]];
  }
  ce /= static_cast<double>(tokens.size() - 1);
  const Loss loss = m.loss(tokens, 0.25);
  EXPECT_NEAR(loss.ce, ce, 1e-12);
  EXPECT_NEAR(loss.total, ce + 0.25 * loss.aux, 1e-12);
  EXPECT_GE(loss.aux, 0.0);
  EXPECT_EQ(loss.positions, 19);
  // Sequences shorter than two tokens are skipped.
  const std::vector<int> one = {3};
  m.zero_grads();
  EXPECT_EQ(m.forward_backward(one).positions, 0);
  for (double g : m.grads()) ASSERT_EQ(g, 0.0);
}

TEST(EvermindModel, AuxLossIsSwitchBalance) {
  // With top_k = n_experts every expert gets every position: f_i = 1/E, so
  // aux = E · Σ_i (1/E) P_i = Σ_i P_i = 1 per layer.
  Config c = default_config(13);
  c.d_model = 8;
  c.hidden_dim = 8;
  c.top_k = c.n_experts;
  Model<double> m(c, 16);
  perturb(m, 9);
  const Loss l = m.loss(random_tokens(10, 13, 2), 0.01);
  EXPECT_NEAR(l.aux, static_cast<double>(c.n_layers), 1e-12);
}

TEST(EvermindModel, IncrementalDecodingEqualsFullRecomputation) {
  test::for_each_isa([](kernels::Isa) {
    for (int64_t K : {1, 3, 5}) {
      Config c = default_config(61);
      c.conv_kernel = K;
      c.d_model = 40;
      c.hidden_dim = 56;
      Model<float> m(c, 64);
      perturb(m, 30 + static_cast<uint64_t>(K));
      const std::vector<int> tokens = random_tokens(37, c.vocab_size, 6);
      std::vector<float> full(tokens.size() * 61);
      m.logits(tokens, full);
      Decoder<float> dec(m);
      for (size_t t = 0; t < tokens.size(); ++t) {
        const std::span<const float> step = dec.step(tokens[t]);
        ASSERT_EQ(0, std::memcmp(step.data(), full.data() + t * 61, 61 * sizeof(float)))
            << "K " << K << " position " << t;
      }
      // reset() starts a fresh context.
      dec.reset();
      const std::span<const float> first = dec.step(tokens[0]);
      EXPECT_EQ(0, std::memcmp(first.data(), full.data(), 61 * sizeof(float)));
    }
  });
}

// Every kernel the model runs promises the same bits at every level (only GPT-2's training
// products are held to tolerances), so the logits, the loss and every gradient are the same
// bytes at every level; and a position's logits do not depend on the positions after it (the
// prefix ending there, alone, gives the same row).
TEST(EvermindModel, SameLogitsAndGradientsAtEveryLevel) {
  Config c = default_config(61);
  c.d_model = 40;  // not a multiple of 16: partial vectors
  c.hidden_dim = 56;
  c.top_k = 2;
  Model<float> m(c, 64);
  perturb(m, 33);
  const std::vector<int> tokens = random_tokens(37, c.vocab_size, 9);
  const size_t V = 61;
  const std::vector<float> logits = test::expect_same_at_every_level(
      [&] {
        std::vector<float> all(tokens.size() * V);
        m.logits(tokens, all);
        return all;
      },
      "logits");
  for (const bool checkpoint : {false, true}) {
    test::expect_same_at_every_level(
        [&] {
          PassOptions opt;
          opt.checkpoint_activations = checkpoint;
          m.zero_grads();
          const Loss l = m.forward_backward(tokens, opt);
          std::vector<float> g(m.grads().begin(), m.grads().end());
          g.push_back(static_cast<float>(l.total));
          g.push_back(static_cast<float>(l.aux));
          return g;
        },
        checkpoint ? "checkpointed gradients" : "gradients");
  }
  test::for_each_isa([&](kernels::Isa) {
    for (const size_t t : {size_t{0}, size_t{1}, size_t{16}, tokens.size() - 2}) {
      const std::vector<int> prefix(tokens.begin(),
                                    tokens.begin() + static_cast<std::ptrdiff_t>(t + 1));
      std::vector<float> alone(prefix.size() * V);
      m.logits(prefix, alone);
      EXPECT_EQ(0, std::memcmp(alone.data() + t * V, logits.data() + t * V, V * sizeof(float)))
          << "position " << t;
    }
  });
}

// The documented init, recomputed here from the Philox block and Box–Muller directly.
double reference_normal(uint64_t key, uint32_t stream, uint64_t i) {
  const PhiloxCounter w =
      philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), stream, 0},
                    {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  const double u1 =
      (std::ldexp(static_cast<double>(w[0] >> 5), 26) + static_cast<double>(w[1] >> 6) + 1) /
      std::ldexp(1.0, 53);
  const double u2 =
      (std::ldexp(static_cast<double>(w[2] >> 5), 26) + static_cast<double>(w[3] >> 6)) /
      std::ldexp(1.0, 53);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * 3.14159265358979323846 * u2);
}

TEST(EvermindModel, InitFollowsTheDocumentedRng) {
  Config c = default_config(20);
  c.d_model = 8;
  c.hidden_dim = 16;
  c.n_layers = 2;
  c.n_experts = 3;
  c.top_k = 1;
  c.seed = 0xfeedbeefcafeull;
  Model<double> m(c, 8);
  const ParamLayout& L = m.layout();
  const auto at = [&](const std::string& name, size_t i) {
    return m.params()[L.at(name).offset + i];
  };
  for (size_t i = 0; i < 20 * 8; ++i)
    ASSERT_EQ(at("emb", i), 0.02 * reference_normal(c.seed, 0, i)) << i;
  for (int l = 0; l < 2; ++l) {
    const uint64_t key = c.seed + 1 + static_cast<uint64_t>(l);
    const std::string p = "layers." + std::to_string(l) + ".";
    for (size_t i = 0; i < 8 * 3; ++i) ASSERT_EQ(at(p + "conv", i), i % 3 == 0 ? 1.0 : 0.0);
    for (size_t i = 0; i < 8; ++i) ASSERT_EQ(at(p + "conv_norm", i), 1.0);
    for (size_t i = 0; i < 8; ++i) ASSERT_EQ(at(p + "moe_norm", i), 1.0);
    for (size_t i = 0; i < 3 * 8; ++i)
      ASSERT_EQ(at(p + "router", i), 0.02 * reference_normal(key, 0, i));
    for (size_t i = 0; i < 16 * 8; ++i) {
      ASSERT_EQ(at(p + "shared.up", i), 0.02 * reference_normal(key, 1, i));
      ASSERT_EQ(at(p + "shared.down", i), 0.02 * reference_normal(key, 2, i));
      for (uint32_t e = 0; e < 3; ++e) {
        ASSERT_EQ(at(p + "experts." + std::to_string(e) + ".up", i),
                  0.02 * reference_normal(key, 3 + 2 * e, i));
        ASSERT_EQ(at(p + "experts." + std::to_string(e) + ".down", i),
                  0.02 * reference_normal(key, 4 + 2 * e, i));
      }
    }
  }
  // Float models start from the same numbers, rounded once.
  Model<float> mf(c, 8);
  for (size_t i = 0; i < m.params().size(); ++i)
    ASSERT_EQ(mf.params()[i], static_cast<float>(m.params()[i]));
  // Statistics of a larger draw: mean 0, standard deviation 0.02.
  Model<double> big(default_config(1024), 4);
  double sum = 0, sq = 0;
  const ParamEntry& emb = big.layout().at("emb");
  for (size_t i = 0; i < emb.numel; ++i) {
    sum += big.params()[i];
    sq += big.params()[i] * big.params()[i];
  }
  const double n = static_cast<double>(emb.numel);
  EXPECT_NEAR(sum / n, 0.0, 3 * 0.02 / std::sqrt(n) * 1.5);
  EXPECT_NEAR(std::sqrt(sq / n), 0.02, 0.0002);
}

// A model built from given weights holds exactly them and computes what a model that was
// initialized and then given those weights computes.
TEST(EvermindModel, ModelFromGivenWeights) {
  const Config c = default_config(10);
  Model<float> donor(c, 8);
  donor.init(12345);
  const std::vector<float> w(donor.params().begin(), donor.params().end());
  Model<float> given(c, 8, w);
  EXPECT_TRUE(std::equal(w.begin(), w.end(), given.params().begin(), given.params().end()));
  const std::vector<int> tokens = {1, 4, 2, 7, 3};
  EXPECT_EQ(given.loss(tokens).total, donor.loss(tokens).total);
  EXPECT_THROW(Model<float>(c, 8, std::span<const float>(w).first(w.size() - 1)), Error);
}

TEST(EvermindModel, InvalidConfigsAndInputsAreErrors) {
  const auto bad = [](auto edit) {
    Config c = default_config(10);
    edit(c);
    EXPECT_THROW(Model<float>(c, 8), Error);
  };
  bad([](Config& c) { c.vocab_size = 0; });
  bad([](Config& c) { c.vocab_size = -3; });
  bad([](Config& c) { c.d_model = 0; });
  bad([](Config& c) { c.n_layers = -1; });
  bad([](Config& c) { c.conv_kernel = 0; });
  bad([](Config& c) { c.hidden_dim = 0; });
  bad([](Config& c) { c.n_experts = 0; });
  bad([](Config& c) { c.top_k = 0; });
  bad([](Config& c) { c.top_k = 5; });
  EXPECT_THROW(Model<float>(default_config(10), 0), Error);
  try {
    Config c = default_config(10);
    c.top_k = 9;
    Model<float> m(c, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_k"), std::string::npos) << e.what();
  }
  Model<float> m(default_config(10), 8);
  const std::vector<int> too_long(9, 1), bad_token = {1, 10}, negative = {-1, 2};
  EXPECT_THROW(m.forward_backward(too_long), Error);
  EXPECT_THROW(m.forward_backward(bad_token), Error);
  EXPECT_THROW(m.loss(negative), Error);
  Decoder<float> dec(m);
  EXPECT_THROW(dec.step(10), Error);
  std::vector<float> wrong_size(5);
  EXPECT_THROW(m.logits(bad_token, wrong_size), Error);
}

// Full recomputation: the logits of the last position of `seq`.
std::vector<float> last_logits(Model<float>& m, const std::vector<int>& seq) {
  const size_t V = static_cast<size_t>(m.config().vocab_size);
  std::vector<float> all(seq.size() * V);
  m.logits(seq, all);
  return {all.end() - static_cast<std::ptrdiff_t>(V), all.end()};
}

Model<float> generation_model() {
  Config c = default_config(40);
  c.d_model = 32;
  c.hidden_dim = 64;
  Model<float> m(c, 64);
  perturb(m, 77);
  // Smaller embeddings: logits spread over a few units, so sampling has choices.
  const ParamEntry& emb = m.layout().at("emb");
  for (size_t i = 0; i < emb.numel; ++i) m.params()[emb.offset + i] *= 0.2f;
  return m;
}

// The generate loop over EvermindLM's decode interface.
generate::GenerateResult evermind_generate(const Model<float>& m, std::span<const int> prompt,
                                           const generate::GenerateOptions& o,
                                           const std::function<bool(int)>& on_token = {}) {
  return generate::generate(*generate::evermind_backend(m), prompt, o, on_token);
}

// The same, text in (encoded with special tokens allowed), text out.
std::string evermind_text(const Model<float>& m, const BpeTokenizer& tok, std::string_view prompt,
                          const generate::GenerateOptions& o,
                          const std::function<void(std::string_view)>& on_text = {}) {
  return generate::generate_text(*generate::evermind_backend(m), tok, tok.encode(prompt, true), o,
                                 on_text)
      .text;
}

TEST(EvermindGenerate, GreedyEqualsArgmaxOfFullRecomputation) {
  Model<float> m = generation_model();
  const std::vector<int> prompt = {3, 14, 15, 9, 2};
  generate::GenerateOptions o;
  o.max_tokens = 30;
  const auto r = evermind_generate(m, prompt, o);
  ASSERT_EQ(r.ids.size(), 30u);
  EXPECT_FALSE(r.stopped_at_eos);
  std::vector<int> seq = prompt;
  for (int i = 0; i < 30; ++i) {
    const std::vector<float> l = last_logits(m, seq);
    const int best = static_cast<int>(std::max_element(l.begin(), l.end()) - l.begin());
    ASSERT_EQ(r.ids[static_cast<size_t>(i)], best) << i;
    seq.push_back(best);
  }
  // A negative temperature is refused (it was greedy here; the one options check of every
  // family refuses it, as `tinylm generate --temperature -1` always did).
  o.sampling.temperature = -1.0;
  EXPECT_THROW(evermind_generate(m, prompt, o), Error);
}

TEST(EvermindGenerate, TemperatureSamplingIsSeededAndMatchesRecomputation) {
  Model<float> m = generation_model();
  const std::vector<int> prompt = {1, 2, 3};
  generate::GenerateOptions o;
  o.max_tokens = 25;
  o.sampling.temperature = 0.8;
  o.sampling.seed = 42;
  const auto a = evermind_generate(m, prompt, o);
  EXPECT_EQ(evermind_generate(m, prompt, o).ids, a.ids);
  // The documented draw, from full recomputation: random.Random(42).choices(range(V), w).
  PyRandom rng(42);
  std::vector<int> seq = prompt;
  for (size_t i = 0; i < a.ids.size(); ++i) {
    const std::vector<float> l = last_logits(m, seq);
    const float mx = *std::max_element(l.begin(), l.end());
    std::vector<double> w(l.size());
    for (size_t v = 0; v < l.size(); ++v) w[v] = std::exp((static_cast<double>(l[v]) - mx) / 0.8);
    const int t = static_cast<int>(rng.choices(w));
    ASSERT_EQ(a.ids[i], t) << i;
    seq.push_back(t);
  }
  o.sampling.seed = 43;
  EXPECT_NE(evermind_generate(m, prompt, o).ids, a.ids);
  // top_k = 1 is greedy whatever the temperature.
  o.sampling.top_k = 1;
  generate::GenerateOptions g;
  g.max_tokens = 25;
  EXPECT_EQ(evermind_generate(m, prompt, o).ids, evermind_generate(m, prompt, g).ids);
}

TEST(EvermindGenerate, StopTokenAndLimits) {
  Model<float> m = generation_model();
  const std::vector<int> prompt = {5};
  generate::GenerateOptions o;
  o.max_tokens = 12;
  const auto greedy = evermind_generate(m, prompt, o);
  ASSERT_EQ(greedy.ids.size(), 12u);
  o.eos_id = greedy.ids[3];
  const size_t first = static_cast<size_t>(
      std::find(greedy.ids.begin(), greedy.ids.end(), o.eos_id) - greedy.ids.begin());
  const auto stopped = evermind_generate(m, prompt, o);
  EXPECT_TRUE(stopped.stopped_at_eos);
  EXPECT_EQ(stopped.ids, std::vector<int>(greedy.ids.begin(),
                                          greedy.ids.begin() + static_cast<std::ptrdiff_t>(first)));
  o.eos_id = -1;
  o.max_tokens = 0;
  EXPECT_TRUE(evermind_generate(m, prompt, o).ids.empty());
  // The callback sees each token and can end generation.
  o.max_tokens = 12;
  int seen = 0;
  const auto cut = evermind_generate(m, prompt, o, [&](int) { return ++seen < 4; });
  EXPECT_EQ(cut.ids, std::vector<int>(greedy.ids.begin(), greedy.ids.begin() + 4));
  EXPECT_THROW(evermind_generate(m, std::vector<int>{}, o), Error);
  EXPECT_THROW(evermind_generate(m, std::vector<int>{40}, o), Error);
  o.eos_id = 40;
  EXPECT_THROW(evermind_generate(m, prompt, o), Error);
}

TEST(EvermindGenerate, TextThroughATokenizer) {
  // A byte-level tokenizer: the 256 byte symbols, one merge and <|endoftext|>.
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (int b = 0; b < 256; ++b) {
    std::string tok;
    append_utf8(tok, byte_to_unicode(static_cast<uint8_t>(b)));
    vocab[tok] = b;
  }
  vocab["\u0120t"] = 256;
  vocab["<|endoftext|>"] = 257;
  nlohmann::ordered_json j;
  j["added_tokens"] = nlohmann::ordered_json::parse(
      R"([{"id": 257, "content": "<|endoftext|>", "special": true}])");
  j["model"] = {
      {"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::ordered_json::array({"\u0120 t"})}};
  const BpeTokenizer tok = BpeTokenizer::from_tokenizer_json_text(j.dump(), "bytes.json");
  Config c = default_config(258);
  c.d_model = 16;
  c.hidden_dim = 32;
  Model<float> m(c, 8);
  perturb(m, 5);
  generate::GenerateOptions o;
  o.max_tokens = 20;
  o.sampling.temperature = 1.0;
  o.sampling.seed = 3;
  std::string streamed;
  const std::string text =
      evermind_text(m, tok, "Hi", o, [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(text, streamed);
  const auto ids = evermind_generate(m, std::vector<int>{'H', 'i'}, o);
  EXPECT_EQ(text, sanitize_utf8(tok.decode(ids.ids)));
  EXPECT_EQ(tok.encode(" to"), (std::vector<int>{256, 'o'}));
  // An empty prompt is refused, as GPT-2 refuses one; so are too many new tokens.
  test::expect_error([&] { evermind_text(m, tok, "", o); }, {"prompt is empty"});
  generate::GenerateOptions many = o;
  many.max_tokens = generate::kMaxNewTokens + 1;
  test::expect_error([&] { evermind_text(m, tok, "Hi", many); }, {"max-tokens"});
  test::expect_error([&] { evermind_generate(m, std::vector<int>{'H'}, many); }, {"max-tokens"});
  EXPECT_FALSE(text.empty());
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::evermind
