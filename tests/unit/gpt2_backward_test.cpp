// GPT-2 training kernels and the whole-model backward against central finite differences in
// double precision, and the vectorized float kernels against their double versions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/loss/cross_entropy.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/models/gpt2/trainer.h"

namespace tinylm::kernels {
namespace {

using Vec = std::vector<double>;

Vec random_vec(size_t n, uint64_t seed, double scale = 1.0, double mean = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, scale);
  Vec v(n);
  for (double& x : v) x = d(rng);
  return v;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Checks analytic[i] against the central difference of f in v[i], for every i: the error
// must be within tol of the gradient's scale (its largest magnitude, at least 1).
void expect_gradient(const std::function<double()>& f, Vec& v, const Vec& analytic, double tol,
                     const char* what) {
  ASSERT_EQ(v.size(), analytic.size()) << what;
  const double h = 1e-5;
  double scale = 1.0, worst = 0.0;
  size_t worst_i = 0;
  Vec numeric(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = f();
    v[i] = saved - h;
    const double down = f();
    v[i] = saved;
    numeric[i] = (up - down) / (2 * h);
    scale = std::max(scale, std::abs(numeric[i]));
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const double err = std::abs(numeric[i] - analytic[i]);
    if (err > worst) {
      worst = err;
      worst_i = i;
    }
  }
  EXPECT_LT(worst / scale, tol) << what << ": element " << worst_i << " analytic "
                                << analytic[worst_i] << " numeric " << numeric[worst_i];
}

constexpr double kTol = 1e-7;  // central differences with h = 1e-5 in double: ~1e-10 error

TEST(Gpt2Backward, LayerNormMatchesFiniteDifferences) {
  const int64_t rows = 3, C = 19;
  Vec x = random_vec(rows * C, 1, 2.0, 0.5), w = random_vec(C, 2, 0.3, 1.0), b = random_vec(C, 3);
  const Vec probe = random_vec(rows * C, 4);
  Vec y(rows * C), mean(rows), rstd(rows);
  const auto f = [&] {
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, C, 1e-5);
    return dot(probe, y);
  };
  f();
  // dx accumulates: start from a known offset and subtract it.
  Vec dx = random_vec(rows * C, 5), dw(C, 0.0), db(C, 0.0);
  const Vec dx0 = dx;
  layernorm_backward(dx.data(), dw.data(), db.data(), probe.data(), x.data(), w.data(), mean.data(),
                     rstd.data(), rows, C);
  for (size_t i = 0; i < dx.size(); ++i) dx[i] -= dx0[i];
  expect_gradient(f, x, dx, kTol, "dx");
  expect_gradient(f, w, dw, kTol, "dw");
  expect_gradient(f, b, db, kTol, "db");
}

TEST(Gpt2Backward, GeluMatchesFiniteDifferences) {
  Vec x(61);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -6.0 + 0.2 * static_cast<double>(i) + 0.013;
  const Vec probe = random_vec(x.size(), 6);
  Vec y(x.size()), dx(x.size());
  const auto f = [&] {
    gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
    return dot(probe, y);
  };
  gelu_backward(dx.data(), probe.data(), x.data(), static_cast<int64_t>(x.size()));
  expect_gradient(f, x, dx, kTol, "gelu dx");
  // and the forward is the tanh GELU
  gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    EXPECT_DOUBLE_EQ(y[i], 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
}

TEST(Gpt2Backward, CausalAttentionMatchesFiniteDifferences) {
  const int64_t B = 2, T = 5, C = 8, H = 2;
  Vec qkv = random_vec(B * T * 3 * C, 11);
  const Vec probe = random_vec(B * T * C, 12);
  Vec out(B * T * C), att(B * H * T * T), scratch(causal_attention_scratch_size(B, T, C, H));
  const auto f = [&] {
    causal_attention_forward(out.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H);
    return dot(probe, out);
  };
  f();
  Vec dqkv(qkv.size(), 99.0);
  causal_attention_backward(dqkv.data(), probe.data(), att.data(), qkv.data(), scratch.data(), B, T, C, H);
  expect_gradient(f, qkv, dqkv, kTol, "dqkv");
  // causality: the output at t does not depend on later positions
  const Vec out0 = out;
  qkv[(1 * T + 4) * 3 * C + C + 3] += 1.0;   // a key of sequence 1, position 4
  qkv[(1 * T + 4) * 3 * C + 2 * C + 5] += 1.0;  // and a value
  f();
  for (int64_t i = 0; i < (1 * T + 4) * C; ++i) {
    EXPECT_EQ(out[i], out0[i]) << i;
  }
}

TEST(Gpt2Backward, CrossEntropyMatchesFiniteDifferences) {
  const int64_t rows = 3, V = 23;
  Vec logits = random_vec(rows * V, 13, 3.0);
  const std::vector<int32_t> targets = {4, 0, 22};
  Vec losses(rows), lse(rows);
  const double scale = 0.37;
  const auto f = [&] {
    return scale * cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), rows, V);
  };
  f();
  for (int64_t r = 0; r < rows; ++r) {
    double z = 0;
    for (int64_t j = 0; j < V; ++j) z += std::exp(logits[r * V + j]);
    EXPECT_NEAR(losses[r], std::log(z) - logits[r * V + targets[r]], 1e-12);
  }
  Vec grad(logits.size());
  cross_entropy_backward(grad.data(), logits.data(), lse.data(), targets.data(), rows, V, scale);
  expect_gradient(f, logits, grad, kTol, "dlogits");
}

// Embedding lookup and the tied head: logits = (wte[tok] + wpe[pos]) wte^T, mean CE. wte's
// gradient has a lookup part and a head part.
TEST(Gpt2Backward, EmbeddingAndTiedHeadMatchFiniteDifferences) {
  const int64_t B = 2, T = 3, V = 6, C = 4;
  const std::vector<int32_t> tokens = {1, 5, 1, 0, 3, 3}, targets = {5, 1, 0, 3, 3, 2};
  Vec wte = random_vec(V * C, 14), wpe = random_vec(T * C, 15);
  Vec x(B * T * C), logits(B * T * V), losses(B * T), lse(B * T);
  const auto f = [&] {
    embedding_forward(x.data(), tokens.data(), wte.data(), wpe.data(), B * T, C, 0, T);
    gemm(Trans::No, Trans::Yes, B * T, V, C, 1.0, x.data(), C, wte.data(), C, 0.0, logits.data(), V);
    return cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), B * T, V) / (B * T);
  };
  f();
  Vec dlogits(logits.size()), dx(x.size()), dwte(wte.size(), 0.0), dwpe(wpe.size(), 0.0);
  cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), B * T, V, 1.0 / (B * T));
  gemm(Trans::No, Trans::No, B * T, C, V, 1.0, dlogits.data(), V, wte.data(), C, 0.0, dx.data(), C);
  gemm(Trans::Yes, Trans::No, V, C, B * T, 1.0, dlogits.data(), V, x.data(), C, 1.0, dwte.data(), C);
  embedding_backward(dwte.data(), dwpe.data(), dx.data(), tokens.data(), B * T, C, T);
  expect_gradient(f, wte, dwte, kTol, "dwte (lookup + head)");
  expect_gradient(f, wpe, dwpe, kTol, "dwpe");
}

TEST(Gpt2Backward, DropoutBackwardIsTheMaskedScale) {
  const int64_t n = 1000;
  const Vec x = random_vec(n, 16);
  Vec y(n), dx(n);
  std::vector<uint8_t> mask(n);
  dropout_forward(y.data(), mask.data(), x.data(), n, 0.25f, {7, 3, 2});
  const Vec dy = random_vec(n, 17);
  dropout_backward(dx.data(), dy.data(), mask.data(), n, 0.25f);
  int kept = 0;
  const double scale = 1.0 / (1.0 - 0.25);
  for (int64_t i = 0; i < n; ++i) {
    kept += mask[i];
    EXPECT_EQ(y[i], mask[i] ? x[i] * scale : 0.0);
    EXPECT_EQ(dx[i], mask[i] ? dy[i] * scale : 0.0);
  }
  EXPECT_NEAR(kept, 750, 60);
}

// The whole model, double precision, every parameter: a tiny config (vocab 11, 8 positions,
// n_embd 8, 2 layers, 2 heads, n_inner 12), batch 2 x 5, with and without dropout (the same
// key every forward, so the masks are fixed and the loss is smooth).
class Gpt2WholeModel : public ::testing::TestWithParam<float> {};

TEST_P(Gpt2WholeModel, EveryParameterGradientMatchesFiniteDifferences) {
  gpt2::Config config;
  config.vocab_size = 11;
  config.n_positions = 8;
  config.n_embd = 8;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_inner = 12;
  gpt2::BasicTrainer<double> trainer(config, {.batch_size = 2, .seq_len = 5, .dropout = GetParam()});
  const ParamLayout& layout = trainer.layout();
  Vec params(layout.size());
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
  const gpt2::DropoutKey key{99, 5};
  const auto f = [&] { return trainer.forward(params, inputs, targets, key); };
  f();
  Vec grads(layout.size(), 0.0);
  trainer.backward(grads);
  expect_gradient(f, params, grads, kTol, "all parameters");
  // accumulation: a second backward adds the same gradient again
  Vec twice = grads;
  f();
  trainer.backward(twice);
  for (size_t i = 0; i < grads.size(); ++i) ASSERT_NEAR(twice[i], 2 * grads[i], 1e-12 * (1 + std::abs(grads[i])));
}

INSTANTIATE_TEST_SUITE_P(Dropout, Gpt2WholeModel, ::testing::Values(0.0f, 0.3f));

// The float kernels (vectorized, with tails: sizes that are not multiples of 16) against their
// double versions on the same inputs.
TEST(Gpt2Backward, FloatKernelsTrackDouble) {
  const auto to_f = [](const Vec& v) { return std::vector<float>(v.begin(), v.end()); };
  const auto max_rel = [](const std::vector<float>& a, const Vec& b) {
    double m = 0, s = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      m = std::max(m, std::abs(a[i] - b[i]));
      s = std::max(s, std::abs(b[i]));
    }
    return m / std::max(s, 1e-30);
  };
  {  // layernorm, C = 83
    const int64_t rows = 5, C = 83;
    const Vec x = random_vec(rows * C, 20, 1.5, 0.3), w = random_vec(C, 21, 0.2, 1.0), b = random_vec(C, 22),
              dy = random_vec(rows * C, 23);
    Vec y(rows * C), m(rows), r(rows), dx(rows * C, 0.0), dw(C, 0.0), db(C, 0.0);
    layernorm_forward(y.data(), m.data(), r.data(), x.data(), w.data(), b.data(), rows, C, 1e-5);
    layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), m.data(), r.data(), rows, C);
    auto xf = to_f(x), wf = to_f(w), bf = to_f(b), dyf = to_f(dy);
    std::vector<float> yf(rows * C), mf(rows), rf(rows), dxf(rows * C, 0.0f), dwf(C, 0.0f), dbf(C, 0.0f);
    layernorm_forward(yf.data(), mf.data(), rf.data(), xf.data(), wf.data(), bf.data(), rows, C, 1e-5f);
    layernorm_backward(dxf.data(), dwf.data(), dbf.data(), dyf.data(), xf.data(), wf.data(), mf.data(), rf.data(), rows, C);
    EXPECT_LT(max_rel(yf, y), 1e-6);
    EXPECT_LT(max_rel(dxf, dx), 1e-5);
    EXPECT_LT(max_rel(dwf, dw), 1e-6);
    EXPECT_LT(max_rel(dbf, db), 1e-6);
  }
  {  // gelu over [-12, 12], n = 1001
    Vec x(1001);
    for (size_t i = 0; i < x.size(); ++i) x[i] = -12.0 + 0.024 * static_cast<double>(i);
    const Vec dy = random_vec(x.size(), 24);
    Vec y(x.size()), dx(x.size());
    gelu_forward(y.data(), x.data(), 1001);
    gelu_backward(dx.data(), dy.data(), x.data(), 1001);
    auto xf = to_f(x), dyf = to_f(dy);
    std::vector<float> yf(x.size()), dxf(x.size());
    gelu_forward(yf.data(), xf.data(), 1001);
    gelu_backward(dxf.data(), dyf.data(), xf.data(), 1001);
    for (size_t i = 0; i < x.size(); ++i) {
      // tanh through exp: ~1e-7 absolute on tanh, so ~1e-7 |x| on gelu
      ASSERT_NEAR(yf[i], y[i], 2e-7 * (1 + std::abs(x[i]))) << x[i];
      ASSERT_NEAR(dxf[i], dx[i], 4e-7 * (1 + std::abs(x[i])) * (1 + std::abs(dy[i]))) << x[i];
    }
  }
  for (const int64_t C : {48, 64, 96}) {  // attention, T = 37: D = 24 (plain loops), 32 and 48 (vector paths)
    const int64_t B = 2, T = 37, H = 2;
    const Vec qkv = random_vec(B * T * 3 * C, 25), dout = random_vec(B * T * C, 26);
    Vec out(B * T * C), att(B * H * T * T), sc(causal_attention_scratch_size(B, T, C, H)), dqkv(qkv.size());
    causal_attention_forward(out.data(), att.data(), qkv.data(), sc.data(), B, T, C, H);
    causal_attention_backward(dqkv.data(), dout.data(), att.data(), qkv.data(), sc.data(), B, T, C, H);
    auto qf = to_f(qkv), df = to_f(dout);
    std::vector<float> of(out.size()), af(att.size()), sf(sc.size()), dqf(qkv.size());
    causal_attention_forward(of.data(), af.data(), qf.data(), sf.data(), B, T, C, H);
    causal_attention_backward(dqf.data(), df.data(), af.data(), qf.data(), sf.data(), B, T, C, H);
    EXPECT_LT(max_rel(of, out), 1e-6) << C;
    EXPECT_LT(max_rel(af, att), 1e-6) << C;
    EXPECT_LT(max_rel(dqf, dqkv), 1e-5) << C;
  }
  {  // cross-entropy over 1037 classes, large logits
    const int64_t rows = 3, V = 1037;
    const Vec logits = random_vec(rows * V, 27, 8.0);
    const std::vector<int32_t> targets = {0, 1036, 500};
    Vec losses(rows), lse(rows), g(rows * V);
    const double total = cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), rows, V);
    cross_entropy_backward(g.data(), logits.data(), lse.data(), targets.data(), rows, V, 0.5);
    auto lf = to_f(logits);
    std::vector<float> lossf(rows), lsef(rows), gf(rows * V);
    const double totalf = cross_entropy_forward(lossf.data(), lsef.data(), lf.data(), targets.data(), rows, V);
    cross_entropy_backward(gf.data(), lf.data(), lsef.data(), targets.data(), rows, V, 0.5f);
    EXPECT_NEAR(totalf, total, 1e-5 * std::abs(total));
    EXPECT_LT(max_rel(gf, g), 1e-6);
  }
}

}  // namespace
}  // namespace tinylm::kernels
