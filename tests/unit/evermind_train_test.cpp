// EvermindLM training through the shared loop (EvermindTrainable + TrainLoop): accumulation =
// averaging, determinism across runs and thread counts, mixed-precision loss scaling (skip on
// overflow, recovery, growth), option and data errors, and a short run on tinyshakespeare
// windows that must cut the held-out loss below 60% of its start.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/models/evermind/model.h"
#include "tinylm/train/batches.h"
#include "tinylm/train/evermind_trainable.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/token_file.h"
#include "tinylm/train/window_data.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

using evermind::Config;
using evermind::Model;

Config small_config() {
  Config c;
  c.vocab_size = 37;
  c.d_model = 32;
  c.n_layers = 2;
  c.hidden_dim = 48;
  c.seed = 17;
  return c;
}

std::vector<int32_t> random_tokens(int64_t n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int32_t& t : out) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return out;
}

// Rows of equal width from a list, `per_step` rows a step, cyclically: step s takes rows
// s * per_step .. s * per_step + per_step - 1 (mod the list).
class ListData final : public StepData {
 public:
  ListData(std::vector<int32_t> tokens, int64_t width, int64_t per_step)
      : tokens_(std::move(tokens)), width_(width), per_step_(per_step) {}

  Rows train_rows(int64_t step) override {
    const int64_t n = static_cast<int64_t>(tokens_.size()) / width_;
    buffer_.clear();
    for (int64_t j = 0; j < per_step_; ++j) {
      const auto row = tokens_.begin() + ((step * per_step_ + j) % n) * width_;
      buffer_.insert(buffer_.end(), row, row + width_);
    }
    return {buffer_, per_step_, width_};
  }
  int64_t micro_rows() const override { return 1; }
  int64_t eval_batches() const override { return 0; }
  Rows eval_rows(int64_t) override { return train_rows(0); }

 private:
  std::vector<int32_t> tokens_, buffer_;
  int64_t width_, per_step_;
};

TokenFile token_file(std::span<const int32_t> ids, int64_t vocab) {
  TokenFileMeta meta;
  meta.tokenizer = "test";
  meta.vocab_size = vocab;
  return TokenFile::from_bytes(encode_token_file(meta, ids), "test tokens");
}

EvermindTrainOptions trainable_options(int64_t max_rows, int threads = 0, bool checkpoint = false,
                                       bool fp16 = false) {
  EvermindTrainOptions o;
  o.max_rows = max_rows;
  o.threads = threads;
  o.checkpoint_activations = checkpoint;
  o.fp16_grads = fp16;
  return o;
}

// AdamW (0.9, 0.999, eps 1e-8, weight decay 0.01) at a constant rate, no warmup.
LoopOptions adamw(int64_t steps, double lr) {
  LoopOptions o;
  o.steps = steps;
  o.lr = {lr, 0.0, 0, steps, optim::LrDecay::constant};
  o.optimizer = Optimizer::adamw;
  o.adam = {0.9, 0.999, 1e-8, 0.01};
  return o;
}

// Mixed precision: fp16 gradients (EvermindTrainOptions) with the loop's loss scaling.
LoopOptions mixed(LoopOptions o, optim::LossScalerConfig scaler = {}) {
  o.loss_scaling = true;
  o.scaler = scaler;
  return o;
}

// Runs the loop from the start; returns every step's record.
std::vector<StepRecord> run_loop(Trainable<float>& model, StepData& data, const LoopOptions& o,
                                 std::vector<double>* val_losses = nullptr) {
  TrainLoop<float> loop(model, data, o);
  std::vector<StepRecord> steps;
  LoopHooks hooks;
  hooks.on_step = [&](const StepRecord& r) { steps.push_back(r); };
  hooks.on_eval = [&](const EvalRecord& e) {
    if (val_losses) val_losses->push_back(e.val_loss);
  };
  loop.run(hooks);
  return steps;
}

// The gradient one loop step leaves in model.grads(): SGD at rate 0 changes no parameter and
// leaves the (unscaled) step gradient where the backward put it.
std::vector<float> step_gradient(Model<float>& m, const std::vector<int32_t>& tokens, int64_t width,
                                 int threads, bool checkpoint) {
  const int64_t rows = static_cast<int64_t>(tokens.size()) / width;
  EvermindTrainable trainable(m, trainable_options(rows, threads, checkpoint));
  EXPECT_EQ(trainable.threads(), threads);
  ListData data(tokens, width, rows);
  LoopOptions o;
  o.steps = 1;
  o.lr = {0.0, 0.0, 0, 1, optim::LrDecay::constant};
  o.optimizer = Optimizer::sgd;
  const std::vector<float> before(m.params().begin(), m.params().end());
  const std::vector<StepRecord> steps = run_loop(trainable, data, o);
  EXPECT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].step_tokens, rows * (width - 1));
  EXPECT_EQ(0, std::memcmp(before.data(), m.params().data(), before.size() * sizeof(float)));
  return {m.grads().begin(), m.grads().end()};
}

TEST(EvermindTrain, AccumulatingEqualsAveragingTheGradients) {
  constexpr int64_t kWidth = 33;
  const std::vector<int32_t> tokens = random_tokens(4 * kWidth, 37, 1);
  const auto row = [&](int64_t r) {
    return std::span<const int32_t>(tokens).subspan(static_cast<size_t>(r * kWidth), kWidth);
  };
  for (bool checkpoint : {false, true}) {
    Model<float> m(small_config(), 64);
    // Reference: each row's gradient alone (seed 1), summed in order, times 1/4.
    std::vector<float> sum(m.params().size(), 0.0f);
    evermind::PassOptions pass;
    pass.checkpoint_activations = checkpoint;
    for (int64_t r = 0; r < 4; ++r) {
      m.zero_grads();
      m.forward_backward(row(r), pass);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += m.grads()[i];
    }
    for (float& g : sum) g *= 0.25f;
    for (int threads : {1, 2, 4}) {
      const std::vector<float> g = step_gradient(m, tokens, kWidth, threads, checkpoint);
      // 1/4 is a power of two, so seeding each backward with it scales exactly.
      ASSERT_EQ(0, std::memcmp(sum.data(), g.data(), sum.size() * sizeof(float)))
          << "threads " << threads << " checkpoint " << checkpoint;
    }
  }
  // Three rows: seeding with 1/3 rounds, so equal to float precision only.
  Model<float> m(small_config(), 64);
  std::vector<double> sum(m.params().size(), 0.0);
  for (int64_t r = 0; r < 3; ++r) {
    m.zero_grads();
    m.forward_backward(row(r));
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += m.grads()[i];
  }
  const std::vector<int32_t> three(tokens.begin(), tokens.begin() + 3 * kWidth);
  const std::vector<float> g = step_gradient(m, three, kWidth, 1, false);
  double worst = 0.0, norm = 0.0;
  for (size_t i = 0; i < sum.size(); ++i) {
    worst = std::max(worst, std::fabs(sum[i] / 3 - g[i]));
    norm = std::max(norm, std::fabs(sum[i] / 3));
  }
  EXPECT_LT(worst, 1e-5 * norm);
}

// A token stream with something to learn: each token is 3 times the last plus 0, 1 or 2
// (mod 37).
std::vector<int32_t> markov_tokens(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(n));
  int32_t t = 0;
  for (int32_t& x : out)
    x = t = static_cast<int32_t>((3 * t + static_cast<int32_t>(rng() % 3)) % 37);
  return out;
}

struct SeededRun {
  std::vector<float> params;
  std::vector<double> losses, val_losses;
};

// 16 AdamW steps of 3 random windows of 48 tokens (the window sampler keyed by `seed`),
// clipping at 1, validation before and after.
SeededRun seeded_run(const TokenFile& tokens, uint64_t seed, int threads, bool mixed_precision) {
  const WindowSampler sampler(split_tokens(tokens.size(), 0.1, 47), 3, 47, 1, seed,
                              DataOrder::random);
  WindowData data(tokens, sampler, 3, 1, 2);
  Model<float> m(small_config(), 48);
  EvermindTrainable trainable(m, trainable_options(3, threads, false, mixed_precision));
  LoopOptions o = adamw(16, 3e-3);
  o.clip = 1.0;
  if (mixed_precision) o = mixed(o);
  SeededRun out;
  const std::vector<StepRecord> steps = run_loop(trainable, data, o, &out.val_losses);
  EXPECT_EQ(steps.size(), 16u);
  for (const StepRecord& r : steps) {
    if (!mixed_precision) {
      EXPECT_FALSE(r.skipped);
    }
    out.losses.push_back(r.loss);
    out.losses.push_back(r.objective);
  }
  out.params.assign(m.params().begin(), m.params().end());
  return out;
}

TEST(EvermindTrain, SeededRunIsReproducibleForAnyThreadCount) {
  const TokenFile tokens = token_file(markov_tokens(1200, 2), 37);
  SeededRun first, first_mixed;
  for (int threads : {1, 2, 3}) {
    for (bool mixed_precision : {false, true}) {
      const SeededRun r = seeded_run(tokens, 5, threads, mixed_precision);
      ASSERT_EQ(r.val_losses.size(), 2u);
      const size_t bytes = r.params.size() * sizeof(float);
      if (threads == 1 && !mixed_precision) {
        first = r;
        EXPECT_LT(r.val_losses[1], r.val_losses[0]);  // it trains
      } else if (!mixed_precision) {
        EXPECT_EQ(0, std::memcmp(first.params.data(), r.params.data(), bytes))
            << "threads " << threads;
        EXPECT_EQ(first.losses, r.losses);
        EXPECT_EQ(first.val_losses, r.val_losses);
      } else if (threads == 1) {
        first_mixed = r;
        EXPECT_NE(0, std::memcmp(first.params.data(), r.params.data(), bytes));  // fp16 shows
      } else {
        EXPECT_EQ(0, std::memcmp(first_mixed.params.data(), r.params.data(), bytes))
            << "mixed, threads " << threads;
        EXPECT_EQ(first_mixed.losses, r.losses);
      }
    }
  }
  // A different data seed gives a different run.
  const SeededRun other = seeded_run(tokens, 6, 1, false);
  EXPECT_NE(0, std::memcmp(first.params.data(), other.params.data(),
                           first.params.size() * sizeof(float)));
}

TEST(EvermindTrain, MixedPrecisionSkipsOverflowingStepsAndRecovers) {
  constexpr int64_t kWidth = 24;
  const std::vector<int32_t> tokens = random_tokens(40 * kWidth, 37, 3);
  // gradients × 2^30 overflow fp16 (max 65504)
  LoopOptions o = mixed(adamw(20, 3e-3), {.initial_scale = std::ldexp(1.0, 30)});
  o.max_bad_steps = 20;
  Model<float> m(small_config(), 32);
  const std::vector<float> init(m.params().begin(), m.params().end());
  EvermindTrainable trainable(m, trainable_options(2, 0, false, true));
  ListData data(tokens, kWidth, 2);
  TrainLoop<float> loop(trainable, data, o);
  std::vector<StepRecord> steps;
  LoopHooks hooks;
  hooks.on_step = [&](const StepRecord& r) { steps.push_back(r); };
  loop.run(hooks);
  ASSERT_EQ(steps.size(), 20u);
  ASSERT_TRUE(steps[0].skipped);
  EXPECT_GE(loop.state().scaler_skipped, 2);
  EXPECT_LT(loop.state().scaler_skipped, 20);
  // Each overflow halves the scale; the first steps change nothing.
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    if (steps[i].skipped) {
      EXPECT_EQ(steps[i + 1].loss_scale, steps[i].loss_scale / 2) << i;
    }
  }
  Model<float> fresh(small_config(), 32);
  EvermindTrainable fresh_trainable(fresh, trainable_options(2, 0, false, true));
  ListData fresh_data(tokens, kWidth, 2);
  LoopOptions one = o;
  one.steps = 1;
  const std::vector<StepRecord> first = run_loop(fresh_trainable, fresh_data, one);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].skipped);
  EXPECT_EQ(0, std::memcmp(init.data(), fresh.params().data(), init.size() * sizeof(float)));
  // Recovery: later steps apply, and the run trains.
  EXPECT_FALSE(steps.back().skipped);
  EXPECT_EQ(loop.state().bad_steps_in_a_row, 0);
  EXPECT_EQ(loop.state().loss_scale, steps.back().loss_scale);
  EXPECT_EQ(loop.state().applied_steps, 20 - loop.state().scaler_skipped);
  EXPECT_NE(0, std::memcmp(init.data(), m.params().data(), init.size() * sizeof(float)));
  for (float p : m.params()) ASSERT_TRUE(std::isfinite(p));
}

TEST(EvermindTrain, LossScaleGrowsAfterCleanSteps) {
  constexpr int64_t kWidth = 16;
  const std::vector<int32_t> tokens = random_tokens(16 * kWidth, 37, 4);
  Model<float> m(small_config(), kWidth);
  EvermindTrainable trainable(m, trainable_options(1, 0, false, true));
  ListData data(tokens, kWidth, 1);
  TrainLoop<float> loop(trainable, data,
                        mixed(adamw(16, 1e-3), {.initial_scale = 4.0, .growth_interval = 3}));
  std::vector<StepRecord> steps;
  LoopHooks hooks;
  hooks.on_step = [&](const StepRecord& r) { steps.push_back(r); };
  loop.run(hooks);
  ASSERT_EQ(steps.size(), 16u);
  EXPECT_EQ(loop.state().scaler_skipped, 0);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_FALSE(steps[i].skipped) << i;
    EXPECT_EQ(steps[i].loss_scale, 4.0 * std::ldexp(1.0, static_cast<int>(i / 3))) << i;
  }
  EXPECT_EQ(loop.state().loss_scale, 4.0 * std::ldexp(1.0, 5));
}

TEST(EvermindTrain, Fp16RoundingMatchesTheDtypeConversions) {
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           1.0f,
                           65504.0f,
                           65519.99f,
                           65520.0f,
                           -65520.0f,
                           1e-8f,
                           2.98e-8f,
                           6.0e-8f,
                           6.1e-5f,
                           3.0e38f,
                           std::numeric_limits<float>::infinity(),
                           0.1f,
                           1.0f / 3};
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isfinite(f)) xs.push_back(f);
    xs.push_back(
        std::ldexp(static_cast<float>(rng() % 4096) + 0.5f, static_cast<int>(rng() % 40) - 35));
  }
  std::vector<float> src = xs, acc(xs.size(), 1.0f);
  kernels::accumulate_and_clear(acc.data(), src.data(), static_cast<int64_t>(xs.size()), true);
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = 1.0f + f16_to_float(float_to_f16(xs[i]));
    ASSERT_TRUE(want == acc[i] || (std::isnan(want) && std::isnan(acc[i]))) << xs[i];
    ASSERT_EQ(src[i], 0.0f);
  }
}

TEST(EvermindTrain, BadOptionsAndDataAreErrors) {
  Model<float> m(small_config(), 16);
  const std::vector<float> before(m.params().begin(), m.params().end());
  const auto unchanged = [&] {
    return 0 == std::memcmp(before.data(), m.params().data(), before.size() * sizeof(float));
  };
  // Options.
  EXPECT_THROW(EvermindTrainable(m, trainable_options(0)), Error);  // no rows per step
  EvermindTrainOptions bad_aux = trainable_options(4);
  bad_aux.aux_loss_coef = -1;
  EXPECT_THROW(EvermindTrainable(m, bad_aux), Error);
  EvermindTrainable trainable(m, trainable_options(4));
  ListData good(random_tokens(4 * 16, 37, 5), 16, 2);
  EXPECT_THROW(TrainLoop<float>(trainable, good, adamw(2, -1.0)), Error);
  LoopOptions bad_clip = adamw(2, 1e-3);
  bad_clip.clip = -1;
  EXPECT_THROW(TrainLoop<float>(trainable, good, bad_clip), Error);
  // Data: each an error before any update.
  const auto fails = [&](std::vector<int32_t> tokens, int64_t width, int64_t per_step) {
    ListData data(std::move(tokens), width, per_step);
    TrainLoop<float> loop(trainable, data, adamw(2, 1e-3));
    EXPECT_THROW(loop.run({}), Error) << width << " x " << per_step;
    EXPECT_TRUE(unchanged());
  };
  fails(std::vector<int32_t>(17, 1), 17, 1);   // wider than the model's 16 positions
  fails({1, 2, 37}, 3, 1);                     // outside the vocabulary
  fails({1, 2, -1}, 3, 1);                     // negative
  fails({1, 2}, 1, 2);                         // a row of one token predicts nothing
  fails(random_tokens(5 * 16, 37, 6), 16, 5);  // more rows than planned (4)
  // Without loss scaling, a non-finite step is an error once max_bad_steps is used up.
  m.params()[3] = std::numeric_limits<float>::quiet_NaN();  // an embedding weight
  const std::vector<float> nan_params(m.params().begin(), m.params().end());
  std::vector<int32_t> tokens(32, 0);  // reads embedding row 0
  ListData data(tokens, 16, 2);
  LoopOptions o = adamw(2, 1e-3);
  o.max_bad_steps = 0;
  TrainLoop<float> loop(trainable, data, o);
  try {
    loop.run({});
    ADD_FAILURE() << "a NaN weight trained without an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(loop.state().applied_steps, 0);
  for (size_t i = 0; i < nan_params.size(); ++i) {
    if (i != 3) {
      ASSERT_EQ(nan_params[i], m.params()[i]) << i;
    }
  }
}

// Byte-level language modelling on the bundled tinyshakespeare text (vocabulary: the 256
// byte values), default architecture (d_model 64, 2 layers, 4 experts, top-2): random
// windows of 65 bytes from the first 90% of the text, the held-out loss over 32 fixed
// windows of the last 10%.
TEST(EvermindTrain, TinyShakespeareLossFallsBelow60PercentOfStart) {
  const std::string text = test::read_text(test::source_path("data/tinyshakespeare.txt"));
  ASSERT_GT(text.size(), 200000u);
  constexpr int64_t kSeqLen = 64;
  std::vector<int32_t> bytes(text.size());
  for (size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<unsigned char>(text[i]);
  const TokenFile tokens = token_file(bytes, 256);
  const WindowSampler sampler(split_tokens(tokens.size(), 0.1, kSeqLen), 4, kSeqLen, 1, 1,
                              DataOrder::random);
  WindowData data(tokens, sampler, 4, 1, 8);  // 8 validation batches of 4 windows
  Config c;
  c.vocab_size = 256;
  c.seed = 1;
  Model<float> m(c, kSeqLen + 1);
  // (any thread count gives the same run; one keeps the test quick on a busy machine)
  EvermindTrainable trainable(m, trainable_options(4, 1));
  LoopOptions o = adamw(80, 1e-3);  // 80 optimizer steps of 4 x 64 predicted bytes
  o.decay = DecayScope::all;
  std::vector<double> val;
  const std::vector<StepRecord> steps = run_loop(trainable, data, o, &val);
  EXPECT_EQ(steps.size(), 80u);
  ASSERT_EQ(val.size(), 2u);
  const double start = val.front(), end = val.back();
  EXPECT_NEAR(start, std::log(256.0), 0.05);
  // Measured: 5.561 -> 2.908 (52%).
  std::printf("[ evermind ] held-out cross-entropy %.3f -> %.3f (%.0f%%)\n", start, end,
              100.0 * end / start);
  EXPECT_LT(end, 0.6 * start) << "held-out cross-entropy " << start << " -> " << end;
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
