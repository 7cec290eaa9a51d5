// The training loop against PyTorch (tests/fixtures/train_loop, made by
// tools/gen_train_loop_fixtures.py): ten AdamW steps with warmup, cosine decay, clipping and
// accumulation over sequential windows, for GPT-2 and EvermindLM, through the real pieces
// (token file, window sampler, the family's Trainable, TrainLoop). Tolerances: 1e-5 relative
// on every loss, learning rate and gradient norm; fingerprints within 1e-5 (sums relative to
// the tensor's absolute sum, the first values absolutely), per the fixture README's measured
// float32-vs-float64 spread.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/train/batches.h"
#include "tinylm/train/evermind_trainable.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/token_file.h"
#include "tinylm/train/window_data.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

using json = nlohmann::json;

json load_fixture(const std::string& name) {
  std::ifstream in(test::source_path("tests/fixtures/train_loop/" + name));
  return json::parse(in);
}

double num(const json& j) { return std::stod(j.get<std::string>()); }

void expect_rel(double got, double want, double tol, const std::string& what) {
  EXPECT_LE(std::abs(got - want), tol * std::abs(want)) << what << ": " << got << " vs " << want;
}

// The fixture's token stream as a token file image, read back through the real parser.
TokenFile fixture_tokens(const json& fx) {
  const std::vector<int32_t> ids = fx["tokens"]["ids"].get<std::vector<int32_t>>();
  TokenFileMeta meta;
  meta.tokenizer = "fixture";
  meta.vocab_size = fx["tokens"]["vocab_size"].get<int64_t>();
  const std::vector<std::byte> image = encode_token_file(meta, ids);
  return TokenFile::from_bytes(image, "fixture tokens");
}

LoopOptions fixture_options(const json& p) {
  LoopOptions o;
  o.steps = p["steps"].get<int64_t>();
  o.lr = {num(p["lr"]), num(p["min_lr"]), p["warmup"].get<int64_t>(), o.steps,
          optim::LrDecay::cosine};
  o.adam = {num(p["beta1"]), num(p["beta2"]), num(p["eps"]), num(p["weight_decay"])};
  o.clip = num(p["clip"]);
  return o;
}

struct Checker {
  Trainable<float>& model;
  const json& fx;

  void fingerprints(const json& want, int64_t step) {
    const std::span<const float> params = model.params();
    for (const json& f : want) {
      const ParamEntry& e = model.layout().at(f["name"].get<std::string>());
      const std::span<const float> x = params.subspan(e.offset, e.numel);
      double sum = 0, abs_sum = 0;
      for (const float v : x) sum += v, abs_sum += std::abs(v);
      const std::string what = "step " + std::to_string(step) + " " + e.name;
      EXPECT_LE(std::abs(sum - num(f["sum"])), 1e-5 * num(f["abs_sum"])) << what << " sum";
      expect_rel(abs_sum, num(f["abs_sum"]), 1e-5, what + " abs_sum");
      for (size_t i = 0; i < f["first8"].size(); ++i)
        EXPECT_NEAR(x[i], num(f["first8"][i]), 1e-5) << what << " [" << i << "]";
    }
  }

  void run(StepData& data, const LoopOptions& options, bool objective) {
    TrainLoop<float> loop(model, data, options);
    expect_rel(loop.evaluate(), num(fx["eval_before"]["loss"]), 1e-5, "eval before");
    size_t i = 0;
    LoopHooks hooks;
    hooks.on_step = [&](const StepRecord& r) {
      const json& want = fx["steps"][i++];
      ASSERT_EQ(r.step, want["step"].get<int64_t>());
      const std::string what = "step " + std::to_string(r.step);
      expect_rel(r.lr, num(want["lr"]), 1e-12, what + " lr");
      expect_rel(r.loss, num(want["loss"]), 1e-5, what + " loss");
      if (objective) expect_rel(r.objective, num(want["objective"]), 1e-5, what + " objective");
      ASSERT_TRUE(r.grad_norm.has_value());
      expect_rel(*r.grad_norm, num(want["grad_norm"]), 1e-5, what + " grad norm");
      fingerprints(want["fingerprints"], r.step);
    };
    loop.run(hooks);
    EXPECT_EQ(i, fx["steps"].size());
    expect_rel(loop.evaluate(), num(fx["eval_after"]["loss"]), 1e-5, "eval after");
  }
};

// The window starts of every step and evaluation batch, as the fixture lists them.
void expect_windows(const json& fx, const WindowSampler& sampler) {
  const json& p = fx["protocol"];
  const int64_t B = p["batch_size"].get<int64_t>(), accum = p["accum"].get<int64_t>();
  for (const json& s : fx["steps"]) {
    for (int64_t a = 0; a < accum; ++a) {
      for (int64_t r = 0; r < B; ++r) {
        EXPECT_EQ(sampler.train_start(s["step"].get<int64_t>() - 1, a * B + r),
                  s["windows"][a][r].get<int64_t>());
      }
    }
  }
  for (size_t k = 0; k < fx["eval_windows"].size(); ++k) {
    for (int64_t r = 0; r < B; ++r)
      EXPECT_EQ(sampler.eval_start(static_cast<int64_t>(k) * B + r), fx["eval_windows"][k][r]);
  }
}

WindowSampler fixture_sampler(const json& fx, const TokenFile& tokens) {
  const json& p = fx["protocol"];
  const DataSplit split =
      split_tokens(tokens.size(), num(p["val_fraction"]), p["seq_len"].get<int64_t>());
  EXPECT_EQ(split.n_train, fx["split"]["n_train"].get<int64_t>());
  return WindowSampler(split, p["batch_size"].get<int64_t>(), p["seq_len"].get<int64_t>(),
                       p["accum"].get<int64_t>(), 0, DataOrder::sequential);
}

// `devices` replicas, each on its shard of every micro-batch (train/replicas.h): the same
// PyTorch run, within the same tolerances, since sharding changes only the summation order.
void gpt2_case(int devices) {
  const json fx = load_fixture("gpt2.json");
  const json& p = fx["protocol"];
  const TokenFile tokens = fixture_tokens(fx);
  const WindowSampler sampler = fixture_sampler(fx, tokens);
  expect_windows(fx, sampler);
  const checkpoints::Gpt2Checkpoint ck =
      checkpoints::load_gpt2(test::source_path("tests/fixtures/gpt2/tiny"));
  Replicas<float> model(gpt2_replicas(
      ck.config, ck.params,
      {p["batch_size"].get<int>() / devices, p["seq_len"].get<int>(), 0.0f, DType::f32}, devices));
  for (const json& e : fx["params"]) {
    const ParamEntry& entry = model.layout().at(e["name"].get<std::string>());
    EXPECT_EQ(entry.role == ParamRole::matrix, e["decay"].get<bool>()) << entry.name;
  }
  WindowData data(tokens, sampler, p["batch_size"].get<int64_t>(), p["accum"].get<int64_t>(),
                  p["eval_batches"].get<int64_t>());
  Checker{model, fx}.run(data, fixture_options(p), false);
}

TEST(TrainLoopFixture, Gpt2MatchesPyTorch) { gpt2_case(1); }
TEST(TrainLoopFixture, Gpt2OnTwoDevicesMatchesPyTorch) { gpt2_case(2); }

void evermind_case(const std::string& name, int devices) {
  const json fx = load_fixture(name + ".json");
  const json& p = fx["protocol"];
  const TokenFile tokens = fixture_tokens(fx);
  const WindowSampler sampler = fixture_sampler(fx, tokens);
  expect_windows(fx, sampler);
  const checkpoints::EvlCheckpoint ck =
      checkpoints::load_evl(test::source_path("tests/fixtures/train_loop/" + name + "_init.evl"));
  const int64_t B = p["batch_size"].get<int64_t>(), T = p["seq_len"].get<int64_t>(),
                accum = p["accum"].get<int64_t>();
  evermind::Model<float> model(ck.config, T + 1, ck.params);
  EvermindTrainOptions options;
  options.aux_loss_coef = num(fx["model"]["aux_loss_coef"]);
  options.max_rows = B * accum;
  EvermindTrainable trainable(model, options);
  for (const json& e : fx["params"]) {
    const ParamEntry& entry = trainable.layout().at(e["name"].get<std::string>());
    EXPECT_EQ(entry.role == ParamRole::matrix, e["decay"].get<bool>()) << entry.name;
  }

  // The first micro-batch's forward and gradient.
  const json& first = fx["first_batch"];
  std::vector<int32_t> flat;
  for (const auto& r : first["rows"]) {
    const std::vector<int32_t> row = r.get<std::vector<int32_t>>();
    flat.insert(flat.end(), row.begin(), row.end());
  }
  const Rows batch{flat, B, T + 1};
  const StepLoss l = trainable.forward_backward(batch, B, 1.0, 0, 0);
  expect_rel(l.loss, num(first["mean_ce"]), 1e-5, "first batch ce");
  expect_rel(l.objective, num(first["objective"]), 1e-5, "first batch objective");
  const io::SafetensorsFile grads = io::SafetensorsFile::open(
      test::source_path("tests/fixtures/train_loop/" + name + "_grads.safetensors"));
  for (const ParamEntry& e : trainable.layout().entries()) {
    const std::vector<double> want = grads.read_f64("f64." + e.name);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < e.numel; ++i) {
      const double d = trainable.grads()[e.offset + i] - want[i];
      diff += d * d;
      norm += want[i] * want[i];
    }
    EXPECT_LE(std::sqrt(diff), 2e-5 * std::sqrt(norm)) << "gradient of " << e.name;
  }

  // Ten AdamW steps from the initial weights, on `devices` replicas.
  std::copy(ck.params.begin(), ck.params.end(), trainable.params().begin());
  options.max_rows = B / devices * accum;
  std::vector<std::unique_ptr<evermind::Model<float>>> copies;
  Replicas<float> sharded(evermind_replicas(model, options, devices, copies));
  WindowData data(tokens, sampler, B, accum, p["eval_batches"].get<int64_t>());
  Checker{sharded, fx}.run(data, fixture_options(p), true);
}

TEST(TrainLoopFixture, EvermindTinyMatchesPyTorch) { evermind_case("evermind_tiny", 1); }
TEST(TrainLoopFixture, EvermindSmallMatchesPyTorch) { evermind_case("evermind_small", 1); }
TEST(TrainLoopFixture, EvermindSmallOnTwoDevicesMatchesPyTorch) {
  evermind_case("evermind_small", 2);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
