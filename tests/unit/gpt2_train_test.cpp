// GPT-2 training against PyTorch fixtures (tools/gen_gpt2_train_fixtures.py: the tiny model of
// tests/fixtures/gpt2/tiny, a 4 x 65 token grid, float32 autograd), plus dropout, mixed
// precision, loss scaling and the train_step options.
#include "tinylm/train/gpt2_train.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/philox.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/models/gpt2/trainer.h"
#include "tinylm/optim/clip.h"
#include "tinylm/train/gpt2_checkpoint.h"

namespace tinylm::train {
namespace {

const std::string kTiny = "tests/fixtures/gpt2/tiny";
const std::string kTrain = "tests/fixtures/gpt2/train";

double num(const nlohmann::json& j) { return std::strtod(j.get<std::string>().c_str(), nullptr); }

struct Fixture {
  Gpt2Checkpoint model;
  std::vector<int32_t> inputs, targets;  // 4 x 64 each
  nlohmann::json expected;
  io::SafetensorsFile tensors;

  static const Fixture& get() {
    static const Fixture f;
    return f;
  }

 private:
  Fixture()
      : model(load_gpt2(test::source_path(kTiny + "/model.safetensors"),
                        test::source_path(kTiny + "/config.json"))),
        expected(
            nlohmann::json::parse(test::read_text(test::source_path(kTrain + "/expected.json")))),
        tensors(io::SafetensorsFile::open(test::source_path(kTrain + "/expected.safetensors"))) {
    const auto grid =
        nlohmann::json::parse(test::read_text(test::source_path(kTrain + "/tokens.json")))["ids"];
    for (const auto& row : grid) {
      for (size_t t = 0; t + 1 < row.size(); ++t) {
        inputs.push_back(row[t].get<int32_t>());
        targets.push_back(row[t + 1].get<int32_t>());
      }
    }
  }
};

gpt2::TrainerOptions options(DType compute = DType::f32, float dropout = 0.0f) {
  return {.batch_size = 4, .seq_len = 64, .dropout = dropout, .compute = compute};
}

// ||a - b|| / ||b|| over one parameter tensor.
double rel_norm_diff(std::span<const float> a, std::span<const float> b) {
  double num2 = 0, den2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num2 += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den2 += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num2 / den2);
}

// The worst per-tensor relative error of grads against the fixture's PyTorch gradients.
double worst_grad_error(const ParamLayout& layout, std::span<const float> grads,
                        std::string* worst_name = nullptr) {
  const Fixture& fx = Fixture::get();
  double worst = 0;
  for (const ParamEntry& e : layout.entries()) {
    const std::vector<float> ref = fx.tensors.read_f32("grad." + e.name, e.shape);
    const double err = rel_norm_diff(grads.subspan(e.offset, e.numel), ref);
    if (err > worst) {
      worst = err;
      if (worst_name) *worst_name = e.name;
    }
  }
  return worst;
}

TEST(Gpt2Train, LossLogitsAndEveryGradientMatchPyTorch) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer trainer(fx.model.config, options());
  const float loss = trainer.forward(fx.model.params, fx.inputs, fx.targets);
  EXPECT_NEAR(loss, num(fx.expected["loss_f32"]), 1e-5 * num(fx.expected["loss_f32"]));
  // per-position losses and batch row 1's logits
  const auto& pos = fx.expected["position_losses_f32"];
  ASSERT_EQ(trainer.position_losses().size(), pos.size());
  for (size_t i = 0; i < pos.size(); ++i)
    EXPECT_NEAR(trainer.position_losses()[i], num(pos[i]), 2e-5) << i;
  const std::vector<float> ref_logits = fx.tensors.read_f32("logits.row1", {64, 1000});
  const auto row1 = trainer.logits().subspan(64 * 1000, 64 * 1000);
  double max_diff = 0;
  for (size_t i = 0; i < ref_logits.size(); ++i)
    max_diff = std::max(max_diff, std::abs(double(row1[i]) - ref_logits[i]));
  EXPECT_LT(max_diff, 1e-5);  // logits of magnitude ~0.5; measured ~1e-7
  std::vector<float> grads(trainer.num_params(), 0.0f);
  trainer.backward(grads);
  std::string name;
  const double worst = worst_grad_error(trainer.layout(), grads, &name);
  EXPECT_LT(worst, 1e-4) << name;  // the documented f32 tolerance; measured ~1e-6
}

TEST(Gpt2Train, SgdTrajectoriesMatchPyTorch) {
  const Fixture& fx = Fixture::get();
  for (const auto& [lr_text, losses] : fx.expected["sgd"]["losses"].items()) {
    double worst = 0;
    gpt2::Trainer trainer(fx.model.config, options());
    std::vector<float> params = fx.model.params;
    Gpt2TrainState state(trainer, {.lr = std::strtod(lr_text.c_str(), nullptr)});
    for (size_t i = 0; i < losses.size(); ++i) {
      const Gpt2StepResult r = train_step(trainer, params, state, fx.inputs, fx.targets);
      EXPECT_TRUE(r.applied);
      EXPECT_EQ(r.scale, 1.0);
      // f32 rounding differences grow slowly over the steps; measured <= 3e-7 relative
      EXPECT_NEAR(r.loss, num(losses[i]), 1e-5 * num(losses[i]))
          << "lr " << lr_text << " step " << i + 1;
      worst = std::max(worst, std::abs(r.loss - num(losses[i])) / num(losses[i]));
    }
    std::printf("[ f32 ] 5 SGD steps at lr %s: worst loss rel err %.2e\n", lr_text.c_str(), worst);
    EXPECT_EQ(state.step, 5);
    EXPECT_EQ(state.applied_steps, 5);
  }
}

TEST(Gpt2Train, ForwardIsRepeatableAndLogitsAreF32) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer trainer(fx.model.config, options());
  const float a = trainer.forward(fx.model.params, fx.inputs, fx.targets);
  const std::vector<float> logits(trainer.logits().begin(), trainer.logits().end());
  const float b = trainer.forward(fx.model.params, fx.inputs, fx.targets);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::equal(logits.begin(), logits.end(), trainer.logits().begin()));
  EXPECT_GT(trainer.activation_bytes(), 0u);
}

// Runs forward + backward and returns (loss, grads).
std::pair<float, std::vector<float>> loss_and_grads(gpt2::Trainer& trainer,
                                                    std::span<const float> params,
                                                    gpt2::DropoutKey key, float scale = 1.0f) {
  const Fixture& fx = Fixture::get();
  const float loss = trainer.forward(params, fx.inputs, fx.targets, key);
  std::vector<float> grads(trainer.num_params(), 0.0f);
  trainer.backward(grads, scale);
  return {loss, grads};
}

TEST(Gpt2Train, OverwriteModeWritesEveryGradient) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer trainer(fx.model.config, options(DType::f32, 0.1f));
  const auto [loss, accumulated] = loss_and_grads(trainer, fx.model.params, {1, 2});
  std::vector<float> written(trainer.num_params(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(trainer.forward(fx.model.params, fx.inputs, fx.targets, {1, 2}), loss);
  trainer.backward(written, 1.0f, gpt2::GradMode::overwrite);
  EXPECT_TRUE(written == accumulated);  // bit for bit, and no NaN left anywhere
}

TEST(Gpt2Train, DropoutRateZeroIsExactlyNoDropout) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer plain(fx.model.config, options());
  gpt2::Trainer switched_off(fx.model.config, options(DType::f32, 0.3f));
  switched_off.set_dropout(0.0f);
  const auto [l0, g0] = loss_and_grads(plain, fx.model.params, {1, 1});
  const auto [l1, g1] = loss_and_grads(switched_off, fx.model.params, {77, 9});
  EXPECT_EQ(l0, l1);
  EXPECT_TRUE(g0 == g1);
  // and with dropout on, the numbers change
  switched_off.set_dropout(0.3f);
  const auto [l2, g2] = loss_and_grads(switched_off, fx.model.params, {77, 9});
  EXPECT_NE(l0, l2);
}

TEST(Gpt2Train, DropoutSameSeedSameRunDifferentSeedOrStepDiffers) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer a(fx.model.config, options(DType::f32, 0.1f)),
      b(fx.model.config, options(DType::f32, 0.1f));
  const auto [la, ga] = loss_and_grads(a, fx.model.params, {123, 4});
  const auto [lb, gb] = loss_and_grads(b, fx.model.params, {123, 4});
  EXPECT_EQ(la, lb);
  EXPECT_TRUE(ga == gb);
  EXPECT_NE(la, loss_and_grads(b, fx.model.params, {124, 4}).first);
  EXPECT_NE(la, loss_and_grads(b, fx.model.params, {123, 5}).first);
  // whole runs through train_step: same seed, same trajectory and weights
  std::vector<float> pa = fx.model.params, pb = fx.model.params;
  Gpt2TrainState sa(a, {.lr = 0.1, .seed = 7}), sb(b, {.lr = 0.1, .seed = 7});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(train_step(a, pa, sa, fx.inputs, fx.targets).loss,
              train_step(b, pb, sb, fx.inputs, fx.targets).loss);
  }
  EXPECT_TRUE(pa == pb);
}

TEST(Gpt2Train, DropoutMasksDoNotDependOnThreadCount) {
  const int saved = num_threads();
  const int64_t n = (int64_t{1} << 22) + 77;  // large enough to be split across threads
  std::vector<uint8_t> one(n), two(n);
  set_num_threads(1);
  kernels::dropout_mask(one.data(), n, 0.1f, {5, 6, 7});
  set_num_threads(2);
  kernels::dropout_mask(two.data(), n, 0.1f, {5, 6, 7});
  EXPECT_TRUE(one == two);
  // each element is the scalar Philox draw of core/philox.h: word e % 4 of counter e / 4
  for (int64_t e = 0; e < n; e += (e < 1000 || e > n - 1000) ? 1 : 7) {
    const PhiloxCounter w = philox4x32_10({static_cast<uint32_t>(e / 4), 7, 6, 0}, {5, 0});
    const float u = static_cast<float>(w[static_cast<size_t>(e % 4)] >> 8) * (1.0f / 16777216.0f);
    ASSERT_EQ(one[e], u >= 0.1f ? 1 : 0) << e;
  }
  EXPECT_NEAR(static_cast<double>(std::count(one.begin(), one.end(), 0)) / static_cast<double>(n),
              0.1, 0.001);
  // a whole forward with dropout: the same masks at 1 and 2 threads
  const Fixture& fx = Fixture::get();
  gpt2::Trainer t(fx.model.config, options(DType::f32, 0.2f));
  set_num_threads(1);
  const float l1 = t.forward(fx.model.params, fx.inputs, fx.targets, {3, 1});
  set_num_threads(2);
  const float l2 = t.forward(fx.model.params, fx.inputs, fx.targets, {3, 1});
  set_num_threads(saved);
  EXPECT_NEAR(l1, l2, 1e-6 * l1);  // matrix products may sum in another order
}

TEST(Gpt2Train, RejectsBadOptionsAndIds) {
  const Fixture& fx = Fixture::get();
  const gpt2::Config& c = fx.model.config;
  EXPECT_THROW(gpt2::Trainer(c, options(DType::f32, 1.0f)), Error);
  EXPECT_THROW(gpt2::Trainer(c, options(DType::f32, -0.1f)), Error);
  EXPECT_THROW(gpt2::Trainer(c, options(DType::i32)), Error);
  EXPECT_THROW(gpt2::Trainer(c, {.batch_size = 1, .seq_len = 65}), Error);  // > n_positions
  EXPECT_THROW(gpt2::BasicTrainer<double>(c, options(DType::bf16)), Error);
  gpt2::Trainer t(c, options());
  EXPECT_THROW(t.set_dropout(1.5f), Error);
  std::vector<int32_t> bad = fx.inputs;
  bad[17] = 1000;  // == vocab_size
  EXPECT_THROW(t.forward(fx.model.params, bad, fx.targets), Error);
  EXPECT_THROW(t.forward(fx.model.params, fx.inputs, bad), Error);
  EXPECT_THROW(t.forward(fx.model.params, std::span(fx.inputs).first(100), fx.targets), Error);
  std::vector<float> grads(t.num_params());
  EXPECT_THROW(t.backward(grads), Error);  // no forward yet
}

// Documented tolerances of the half compute types against PyTorch's f32 numbers (the fixture):
// loss relative 1e-4 (bf16) / 2e-5 (f16); gradients per tensor, norm-wise relative, 2e-2 (bf16)
// / 5e-3 (f16). Measured: bf16 loss 4.8e-6, gradients 5.5e-3 (h.0.ln_1.weight), logits 2e-3;
// f16 loss 6.2e-7, gradients 6.5e-4, logits 2.5e-4. bf16 keeps 8 mantissa bits, so each
// rounded operand is off by up to 2^-9 relative; the errors largely average out in the sums.
struct HalfCase {
  DType dtype;
  double loss_tol, grad_tol;
};
class Gpt2HalfCompute : public ::testing::TestWithParam<HalfCase> {};

TEST_P(Gpt2HalfCompute, LossAndGradientsTrackF32) {
  const Fixture& fx = Fixture::get();
  const HalfCase p = GetParam();
  gpt2::Trainer trainer(fx.model.config, options(p.dtype));
  std::vector<float> params = fx.model.params;
  // lr 0: one step leaves the parameters as they are and the unscaled gradients in the state
  Gpt2TrainState state(trainer, {.lr = 0.0});
  const Gpt2StepResult r = train_step(trainer, params, state, fx.inputs, fx.targets);
  ASSERT_TRUE(r.applied);
  EXPECT_EQ(r.scale, p.dtype == DType::f16 ? 65536.0 : 1.0);
  const double ref = num(fx.expected["loss_f32"]);
  EXPECT_NEAR(r.loss, ref, p.loss_tol * ref);
  EXPECT_GT(std::abs(r.loss - ref), 0.0);  // the half path is really taken
  std::string name;
  const double worst = worst_grad_error(trainer.layout(), state.grads, &name);
  EXPECT_LT(worst, p.grad_tol) << name;
  EXPECT_TRUE(params == fx.model.params);
  // the logits stay float and close to f32's
  trainer.forward(params, fx.inputs, fx.targets);
  const std::vector<float> ref_logits = fx.tensors.read_f32("logits.row1", {64, 1000});
  double max_diff = 0;
  for (size_t i = 0; i < ref_logits.size(); ++i) {
    max_diff =
        std::max(max_diff, std::abs(double(trainer.logits()[64 * 1000 + i]) - ref_logits[i]));
  }
  EXPECT_LT(max_diff, p.dtype == DType::bf16 ? 2e-2 : 2e-3);
  std::printf("[ %s ] loss rel err %.2e, worst grad rel err %.2e (%s), max logit diff %.2e\n",
              std::string(dtype_name(p.dtype)).c_str(), std::abs(r.loss - ref) / ref, worst,
              name.c_str(), max_diff);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Gpt2HalfCompute,
                         ::testing::Values(HalfCase{DType::bf16, 1e-4, 2e-2},
                                           HalfCase{DType::f16, 2e-5, 5e-3}),
                         [](const ::testing::TestParamInfo<HalfCase>& c) {
                           return std::string(dtype_name(c.param.dtype));
                         });

TEST(Gpt2Train, HalfComputeTrajectoriesTrackF32) {
  const Fixture& fx = Fixture::get();
  const auto& ref = fx.expected["sgd"]["losses"]["0.5"];
  for (DType dt : {DType::bf16, DType::f16}) {
    gpt2::Trainer trainer(fx.model.config, options(dt));
    std::vector<float> params = fx.model.params;
    Gpt2TrainState state(trainer, {.lr = 0.5});
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const Gpt2StepResult r = train_step(trainer, params, state, fx.inputs, fx.targets);
      ASSERT_TRUE(r.applied);
      worst = std::max(worst, std::abs(r.loss - num(ref[i])) / num(ref[i]));
      EXPECT_NEAR(r.loss, num(ref[i]), 1e-3 * num(ref[i])) << dtype_name(dt) << " step " << i + 1;
    }
    std::printf("[ %s ] 5 SGD steps at lr 0.5: worst loss rel err %.2e\n",
                std::string(dtype_name(dt)).c_str(), worst);
  }
}

TEST(Gpt2Train, F16ScalerSkipsOverflowingStepsAndRecovers) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer trainer(fx.model.config, options(DType::f16));
  std::vector<float> params = fx.model.params;
  // A scale of 2^40 makes the scaled output gradients overflow f16 (max 65504) where they
  // enter the head's matrix product: inf gradients, skipped steps, halving scales.
  Gpt2TrainState state(trainer,
                       {.lr = 0.5, .scaler = {.initial_scale = 0x1p40, .growth_interval = 3}});
  double scale = 0x1p40;
  int skipped = 0;
  Gpt2StepResult r;
  for (;;) {
    r = train_step(trainer, params, state, fx.inputs, fx.targets);
    EXPECT_EQ(r.scale, scale);
    if (r.applied) break;
    ++skipped;
    EXPECT_TRUE(params == fx.model.params) << "a skipped step must leave the parameters unchanged";
    scale /= 2;
    ASSERT_LT(skipped, 40);
  }
  EXPECT_GE(skipped, 10);  // 2^40 / 256 rows is far above 65504
  EXPECT_EQ(state.scaler.skipped_steps(), skipped);
  EXPECT_EQ(state.applied_steps, 1);
  EXPECT_NEAR(r.loss, num(fx.expected["loss_f32"]), 5e-4 * r.loss);  // the first applied step
  EXPECT_FALSE(params == fx.model.params);
  // After the growth interval of finite steps the scale doubles, and training goes on.
  const Gpt2StepResult r2 = train_step(trainer, params, state, fx.inputs, fx.targets);
  const Gpt2StepResult r3 = train_step(trainer, params, state, fx.inputs, fx.targets);
  EXPECT_TRUE(r2.applied && r3.applied);
  EXPECT_EQ(state.scaler.scale(), 2 * scale);
  EXPECT_LT(r3.loss, r.loss);
}

TEST(Gpt2Train, NonFiniteLossThrowsBeforeAnyUpdate) {
  const Fixture& fx = Fixture::get();
  std::vector<float> params = fx.model.params;
  params[fx.model.config.n_embd] = std::numeric_limits<float>::infinity();  // wte[1][0]
  const std::vector<float> before = params;
  for (DType dt : {DType::f32, DType::bf16}) {
    gpt2::Trainer trainer(fx.model.config, options(dt));
    Gpt2TrainState state(trainer, {.lr = 0.1});
    std::vector<int32_t> inputs = fx.inputs;
    inputs[0] = 1;
    EXPECT_THROW(train_step(trainer, params, state, inputs, fx.targets), Error);
    EXPECT_TRUE(params == before);
  }
  // f16: the same is an overflow, the step is skipped
  gpt2::Trainer trainer(fx.model.config, options(DType::f16));
  Gpt2TrainState state(trainer, {.lr = 0.1});
  std::vector<int32_t> inputs = fx.inputs;
  inputs[0] = 1;
  const Gpt2StepResult r = train_step(trainer, params, state, inputs, fx.targets);
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(state.scaler.scale(), 32768.0);
  EXPECT_TRUE(params == before);
}

TEST(Gpt2Train, AdamWAndClippingAreTheOptimPiecesOnTheGradients) {
  const Fixture& fx = Fixture::get();
  const optim::AdamConfig adam{.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  gpt2::Trainer trainer(fx.model.config, options());
  std::vector<float> params = fx.model.params;
  Gpt2TrainState state(
      trainer, {.optimizer = Gpt2Optimizer::adamw, .lr = 1e-3, .adam = adam, .clip_norm = 0.05});
  // the same by hand: gradients, clip, Adam with decoupled weight decay
  std::vector<float> manual = fx.model.params;
  optim::Adam<float> opt(manual.size(), adam);
  gpt2::Trainer ref(fx.model.config, options());
  for (int64_t t = 1; t <= 2; ++t) {
    const Gpt2StepResult r = train_step(trainer, params, state, fx.inputs, fx.targets);
    auto [loss, grads] = loss_and_grads(ref, manual, {});
    EXPECT_EQ(r.loss, loss);
    const double norm = optim::clip_global_norm(grads, 0.05);
    EXPECT_EQ(r.grad_norm, norm);
    EXPECT_GT(norm, 0.05);  // clipping is active
    opt.step(manual, grads, 1e-3, t);
    ASSERT_TRUE(params == manual) << "step " << t;
  }
  EXPECT_EQ(state.applied_steps, 2);
}

}  // namespace
}  // namespace tinylm::train
