// GPT-2 training against PyTorch fixtures (tools/gen_gpt2_train_fixtures.py: the tiny model of
// tests/fixtures/gpt2/tiny, a 4 x 65 token grid, float32 autograd), plus dropout, mixed
// precision, loss scaling, and the shared training loop run as `tinylm train-gpt2` runs it
// (Gpt2Trainable + TrainLoop over the same batch every step): SGD, AdamW, clipping, the f16
// loss scaler and the non-finite guard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/philox.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/models/gpt2/trainer.h"
#include "tinylm/optim/grad_ops.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/loop.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

const std::string kTiny = "tests/fixtures/gpt2/tiny";
const std::string kTrain = "tests/fixtures/gpt2/train";

double num(const nlohmann::json& j) { return std::strtod(j.get<std::string>().c_str(), nullptr); }

struct Fixture {
  checkpoints::Gpt2Checkpoint model;
  std::vector<int32_t> grid;             // 4 x 65: the rows the training loop takes
  std::vector<int32_t> inputs, targets;  // 4 x 64 each
  nlohmann::json expected;
  io::SafetensorsFile tensors;

  static const Fixture& get() {
    static const Fixture f;
    return f;
  }

 private:
  Fixture()
      : model(checkpoints::load_gpt2(test::source_path(kTiny + "/model.safetensors"),
                                     test::source_path(kTiny + "/config.json"))),
        expected(
            nlohmann::json::parse(test::read_text(test::source_path(kTrain + "/expected.json")))),
        tensors(io::SafetensorsFile::open(test::source_path(kTrain + "/expected.safetensors"))) {
    const auto ids =
        nlohmann::json::parse(test::read_text(test::source_path(kTrain + "/tokens.json")))["ids"];
    for (const auto& row : ids) {
      for (const auto& id : row) grid.push_back(id.get<int32_t>());
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

// The fixed batch of the reference protocol: the fixture's grid, every step.
class FixedBatch final : public StepData {
 public:
  explicit FixedBatch(std::vector<int32_t> grid) : grid_(std::move(grid)) {}
  Rows train_rows(int64_t) override { return rows(); }
  int64_t micro_rows() const override { return 4; }
  int64_t eval_batches() const override { return 0; }
  Rows eval_rows(int64_t) override { return rows(); }
  Rows rows() const { return {grid_, 4, 65}; }

 private:
  std::vector<int32_t> grid_;
};

// train-gpt2's loop: SGD at a constant rate, no clipping, loss scaling under f16. Long
// enough that the tests step it one step at a time.
LoopOptions protocol(double lr, DType compute = DType::f32) {
  LoopOptions o;
  o.steps = 1000;
  o.lr = {lr, 0.0, 0, o.steps, optim::LrDecay::constant};
  o.optimizer = Optimizer::sgd;
  o.loss_scaling = compute == DType::f16;
  o.max_bad_steps = 0;
  return o;
}

// A Gpt2Trainable from the fixture's weights (or `params`), the fixed batch, and the loop.
struct LoopRun {
  LoopRun(DType compute, const LoopOptions& o, float dropout = 0.0f,
          std::vector<float> params = Fixture::get().model.params,
          std::vector<int32_t> grid = Fixture::get().grid)
      : model(Fixture::get().model.config, std::move(params), options(compute, dropout)),
        data(std::move(grid)),
        loop(model, data, o) {}

  // Runs one more optimizer step; returns its record.
  StepRecord step() {
    StepRecord out;
    int64_t steps = 0;
    LoopHooks hooks;
    hooks.on_step = [&](const StepRecord& r) {
      out = r;
      ++steps;
    };
    hooks.should_stop = [] { return true; };
    loop.run(hooks);
    EXPECT_EQ(steps, 1);
    return out;
  }
  bool params_are(std::span<const float> p) {
    return std::equal(p.begin(), p.end(), model.params().begin(), model.params().end());
  }

  Gpt2Trainable model;
  FixedBatch data;
  TrainLoop<float> loop;
};

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
    const double lr = std::strtod(lr_text.c_str(), nullptr);
    LoopRun run(DType::f32, protocol(lr));
    for (size_t i = 0; i < losses.size(); ++i) {
      const StepRecord r = run.step();
      EXPECT_FALSE(r.skipped);
      EXPECT_EQ(r.loss_scale, 1.0);
      EXPECT_EQ(r.lr, lr);
      EXPECT_FALSE(r.grad_norm.has_value());  // no clipping, no norm pass
      // f32 rounding differences grow slowly over the steps; measured <= 3e-7 relative
      EXPECT_NEAR(r.loss, num(losses[i]), 1e-5 * num(losses[i]))
          << "lr " << lr_text << " step " << i + 1;
      worst = std::max(worst, std::abs(r.loss - num(losses[i])) / num(losses[i]));
    }
    std::printf("[ f32 ] 5 SGD steps at lr %s: worst loss rel err %.2e\n", lr_text.c_str(), worst);
    EXPECT_EQ(run.loop.state().step, 5);
    EXPECT_EQ(run.loop.state().applied_steps, 5);
  }
}

// What train-gpt2 relies on: step s (1-based) of a single-micro-batch step is the loss of a
// forward with dropout key (seed, s) at the weights before it, and the update is w -= lr g in
// float, bit for bit.
TEST(Gpt2Train, LoopStepIsDropoutKeyedForwardBackwardThenSgd) {
  const Fixture& fx = Fixture::get();
  LoopOptions o = protocol(0.1);
  o.seed = 7;
  LoopRun run(DType::f32, o, 0.1f);
  gpt2::Trainer ref(fx.model.config, options(DType::f32, 0.1f));
  std::vector<float> manual = fx.model.params;
  for (uint64_t s = 1; s <= 3; ++s) {
    const StepRecord r = run.step();
    const auto [loss, grads] = loss_and_grads(ref, manual, {7, s});
    EXPECT_EQ(r.loss, static_cast<double>(loss)) << "step " << s;
    for (size_t i = 0; i < manual.size(); ++i) manual[i] -= 0.1f * grads[i];
    ASSERT_TRUE(run.params_are(manual)) << "step " << s;
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

TEST(Gpt2Train, OverwriteModeWritesEveryGradient) {
  const Fixture& fx = Fixture::get();
  gpt2::Trainer trainer(fx.model.config, options(DType::f32, 0.1f));
  const auto [loss, accumulated] = loss_and_grads(trainer, fx.model.params, {1, 2});
  std::vector<float> written(trainer.num_params(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(trainer.forward(fx.model.params, fx.inputs, fx.targets, {1, 2}), loss);
  trainer.backward(written, 1.0f, gpt2::GradMode::overwrite);
  EXPECT_TRUE(written == accumulated);  // bit for bit, and no NaN left anywhere
}

// Without biases (nanoGPT's bias=False), on weights whose biases are zero: the same loss and
// the same bits in every other gradient as with zero biases added and trained (the linear
// layers' biases are then skipped, not added), and every bias gradient zero, in both modes.
TEST(Gpt2Train, WithoutBiasesIsZeroBiasesWithTheirGradientsHeld) {
  const Fixture& fx = Fixture::get();
  const ParamLayout layout = gpt2::param_layout(fx.model.config);
  std::vector<float> params = fx.model.params;
  for (const ParamEntry& e : layout.entries()) {
    if (e.role == ParamRole::bias)
      std::fill_n(params.begin() + static_cast<std::ptrdiff_t>(e.offset), e.numel, 0.0f);
  }
  gpt2::TrainerOptions without = options();
  without.biases = false;
  gpt2::Trainer with_zero(fx.model.config, options()), held(fx.model.config, without);
  const auto [l0, g0] = loss_and_grads(with_zero, params, {});
  for (const gpt2::GradMode mode : {gpt2::GradMode::accumulate, gpt2::GradMode::overwrite}) {
    SCOPED_TRACE(mode == gpt2::GradMode::accumulate ? "accumulate" : "overwrite");
    EXPECT_EQ(held.forward(params, fx.inputs, fx.targets), l0);
    std::vector<float> g1(held.num_params(), mode == gpt2::GradMode::accumulate ? 0.0f : 1.0f);
    held.backward(g1, 1.0f, mode);
    size_t biases = 0;
    for (const ParamEntry& e : layout.entries()) {
      const auto got = std::span(g1).subspan(e.offset, e.numel);
      if (e.role == ParamRole::bias) {
        ++biases;
        EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float v) { return v == 0.0f; }))
            << e.name;
        // (with biases trained, their gradients are not zero: the check above can fail)
        const auto trained = std::span(g0).subspan(e.offset, e.numel);
        EXPECT_FALSE(std::all_of(trained.begin(), trained.end(), [](float v) { return v == 0.0f; }))
            << e.name;
      } else {
        EXPECT_TRUE(std::ranges::equal(got, std::span(g0).subspan(e.offset, e.numel))) << e.name;
      }
    }
    EXPECT_EQ(biases, 6u * fx.model.config.n_layer + 1);  // six a block, and ln_f's
  }
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
  // whole runs through the training loop: same seed, same trajectory and weights
  LoopOptions o = protocol(0.1);
  o.seed = 7;
  LoopRun ra(DType::f32, o, 0.1f), rb(DType::f32, o, 0.1f);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ra.step().loss, rb.step().loss);
  EXPECT_TRUE(rb.params_are(ra.model.params()));
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
  // SGD at lr 0: one step leaves the parameters as they are and the unscaled gradients in
  // the gradient buffer
  LoopRun run(p.dtype, protocol(0.0, p.dtype));
  const StepRecord r = run.step();
  ASSERT_FALSE(r.skipped);
  EXPECT_EQ(r.loss_scale, p.dtype == DType::f16 ? 65536.0 : 1.0);
  const double ref = num(fx.expected["loss_f32"]);
  EXPECT_NEAR(r.loss, ref, p.loss_tol * ref);
  EXPECT_GT(std::abs(r.loss - ref), 0.0);  // the half path is really taken
  std::string name;
  const double worst = worst_grad_error(run.model.layout(), run.model.grads(), &name);
  EXPECT_LT(worst, p.grad_tol) << name;
  EXPECT_TRUE(run.params_are(fx.model.params));
  // the logits stay float and close to f32's
  gpt2::Trainer trainer(fx.model.config, options(p.dtype));
  trainer.forward(fx.model.params, fx.inputs, fx.targets);
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
    LoopRun run(dt, protocol(0.5, dt));
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const StepRecord r = run.step();
      ASSERT_FALSE(r.skipped);
      worst = std::max(worst, std::abs(r.loss - num(ref[i])) / num(ref[i]));
      EXPECT_NEAR(r.loss, num(ref[i]), 1e-3 * num(ref[i])) << dtype_name(dt) << " step " << i + 1;
    }
    std::printf("[ %s ] 5 SGD steps at lr 0.5: worst loss rel err %.2e\n",
                std::string(dtype_name(dt)).c_str(), worst);
  }
}

TEST(Gpt2Train, F16ScalerSkipsOverflowingStepsAndRecovers) {
  const Fixture& fx = Fixture::get();
  // A scale of 2^40 makes the scaled output gradients overflow f16 (max 65504) where they
  // enter the head's matrix product: inf gradients, skipped steps, halving scales.
  LoopOptions o = protocol(0.5, DType::f16);
  o.scaler = {.initial_scale = 0x1p40, .growth_interval = 3};
  o.max_bad_steps = 40;
  LoopRun run(DType::f16, o);
  double scale = 0x1p40;
  int skipped = 0;
  StepRecord r;
  for (;;) {
    r = run.step();
    EXPECT_EQ(r.loss_scale, scale);
    if (!r.skipped) break;
    ++skipped;
    EXPECT_TRUE(run.params_are(fx.model.params))
        << "a skipped step must leave the parameters unchanged";
    scale /= 2;
    ASSERT_LT(skipped, 40);
  }
  EXPECT_GE(skipped, 10);  // 2^40 / 256 rows is far above 65504
  EXPECT_EQ(run.loop.state().scaler_skipped, skipped);
  EXPECT_EQ(run.loop.state().applied_steps, 1);
  EXPECT_EQ(run.loop.state().bad_steps_in_a_row, 0);
  EXPECT_NEAR(r.loss, num(fx.expected["loss_f32"]), 5e-4 * r.loss);  // the first applied step
  EXPECT_FALSE(run.params_are(fx.model.params));
  // After the growth interval of finite steps the scale doubles, and training goes on.
  const StepRecord r2 = run.step();
  const StepRecord r3 = run.step();
  EXPECT_TRUE(!r2.skipped && !r3.skipped);
  EXPECT_EQ(run.loop.state().loss_scale, 2 * scale);
  EXPECT_LT(r3.loss, r.loss);
}

TEST(Gpt2Train, NonFiniteLossStopsTheRunBeforeAnyUpdate) {
  const Fixture& fx = Fixture::get();
  std::vector<float> params = fx.model.params;
  params[fx.model.config.n_embd] = std::numeric_limits<float>::infinity();  // wte[1][0]
  std::vector<int32_t> grid = fx.grid;
  grid[0] = 1;  // the first input token reads it
  for (DType dt : {DType::f32, DType::bf16}) {
    // max_bad_steps 0, as train-gpt2 has no loss scale to lower in f32 and bf16; with clipping,
    // the norm's pass is the check
    for (const double clip : {0.0, 1.0}) {
      LoopOptions o = protocol(0.1, dt);
      o.clip = clip;
      LoopRun run(dt, o, 0.0f, params, grid);
      EXPECT_THROW(run.step(), Error) << dtype_name(dt) << " clip " << clip;
      EXPECT_TRUE(run.params_are(params));
      EXPECT_EQ(run.loop.state().applied_steps, 0);
    }
  }
  // f16: the same is an overflow, the step is skipped
  LoopOptions o = protocol(0.1, DType::f16);
  o.max_bad_steps = 1;
  LoopRun run(DType::f16, o, 0.0f, params, grid);
  const StepRecord r = run.step();
  EXPECT_TRUE(r.skipped);
  EXPECT_FALSE(std::isfinite(r.loss));
  EXPECT_EQ(run.loop.state().loss_scale, 32768.0);
  EXPECT_TRUE(run.params_are(params));
}

TEST(Gpt2Train, AdamWAndClippingAreTheOptimPiecesOnTheGradients) {
  const Fixture& fx = Fixture::get();
  const optim::AdamConfig adam{.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  LoopOptions o = protocol(1e-3);
  o.optimizer = Optimizer::adamw;
  o.adam = adam;
  o.clip = 0.05;
  o.decay = DecayScope::matrices;
  LoopRun run(DType::f32, o);
  // the same by hand: gradients, clip, Adam with decoupled weight decay on the matrices
  std::vector<float> manual = fx.model.params;
  optim::Adam<float> opt(manual.size(), adam);
  std::vector<uint8_t> decays(manual.size(), 0);
  for (const ParamEntry& e : run.model.layout().entries()) {
    if (e.role == ParamRole::matrix) std::fill_n(decays.begin() + e.offset, e.numel, 1);
  }
  EXPECT_GT(std::count(decays.begin(), decays.end(), 1), 0);
  EXPECT_GT(std::count(decays.begin(), decays.end(), 0), 0);  // wte, wpe, norms, biases
  opt.set_decay(decays);
  gpt2::Trainer ref(fx.model.config, options());
  for (int64_t t = 1; t <= 2; ++t) {
    const StepRecord r = run.step();
    auto [loss, grads] = loss_and_grads(ref, manual, {});
    EXPECT_EQ(r.loss, static_cast<double>(loss));
    const double norm = optim::clip_global_norm(std::span<float>(grads), 0.05);
    ASSERT_TRUE(r.grad_norm.has_value());
    EXPECT_EQ(*r.grad_norm, norm);
    EXPECT_GT(norm, 0.05);  // clipping is active
    opt.step(manual, grads, 1e-3, t);
    ASSERT_TRUE(run.params_are(manual)) << "step " << t;
  }
  EXPECT_EQ(run.loop.state().applied_steps, 2);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
