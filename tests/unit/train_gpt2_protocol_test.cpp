// train-gpt2's protocol as a library call (train/gpt2_protocol.h): its option checks, its
// stdout step line, and a short run on a small model (the CLI's byte-for-byte output is
// cli_train_gpt2_test's).
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "tinylm/models/gpt2/init.h"
#include "tinylm/train/gpt2_protocol.h"
#include "tinylm/train/run_config.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

using train::Gpt2Protocol;
using train::Gpt2ProtocolOptions;

TEST(TrainGpt2Protocol, ChecksEveryOption) {
  const auto refused = [](auto&& set, int64_t processes, const std::string& phrase) {
    Gpt2ProtocolOptions o;
    set(o);
    EXPECT_THROW(Gpt2Protocol::check(o, processes), train::FlagError);
    expect_error([&] { Gpt2Protocol::check(o, processes); }, {phrase});
  };
  Gpt2Protocol::check({}, 1);
  refused([](Gpt2ProtocolOptions& o) { o.steps = -1; }, 1, "--steps must be non-negative");
  refused([](Gpt2ProtocolOptions& o) { o.lr = NAN; }, 1, "--lr must be finite");
  refused([](Gpt2ProtocolOptions& o) { o.dropout = 1.0; }, 1, "--dropout must be in [0, 1)");
  refused([](Gpt2ProtocolOptions& o) { o.compute = "f64"; }, 1,
          "--compute-dtype must be f32, bf16 or f16 (got f64)");
  refused([](Gpt2ProtocolOptions& o) { o.devices = 3; }, 1,
          "--devices 3: the batch of 4 rows must split into equal shards");
  refused([](Gpt2ProtocolOptions& o) { o.devices = 4; }, 2, "processes x devices = 8");
}

TEST(TrainGpt2Protocol, StepLineShowsTheScaleOnlyWhenTheLossIsScaled) {
  train::StepRecord r;
  r.step = 3;
  r.loss = 2.5;
  r.loss_scale = 32768;
  EXPECT_EQ(train::protocol_step_line(r, false), "step   3  loss 2.5");
  EXPECT_EQ(train::protocol_step_line(r, true), "step   3  loss 2.5  scale 32768");
  r.skipped = true;
  EXPECT_EQ(train::protocol_step_line(r, true),
            "step   3  loss 2.5  scale 32768  (skipped: gradients overflowed)");
}

TEST(TrainGpt2Protocol, RunsTheStepsAndRecordsEach) {
  gpt2::Config config = gpt2::preset("small-test");
  std::vector<int32_t> grid(Gpt2Protocol::kBatch * (Gpt2Protocol::kSeq + 1));
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = static_cast<int32_t>((i * 7) % 50);
  Gpt2ProtocolOptions o;
  o.steps = 2;
  o.lr = 1e-2;
  o.record_weights = true;
  Gpt2Protocol protocol(config, gpt2::init_params(config, 1), grid, o);
  EXPECT_EQ(protocol.timing_summary(), "");
  const float initial = protocol.initial_loss();
  EXPECT_TRUE(std::isfinite(initial));
  std::vector<double> losses;
  const int64_t done = protocol.run([&](const train::StepRecord& r) { losses.push_back(r.loss); },
                                    [] { return false; });
  EXPECT_EQ(done, 2);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_FLOAT_EQ(static_cast<float>(losses[0]), initial);  // the loss before the first update
  EXPECT_LT(losses[1], losses[0]);
  ASSERT_EQ(protocol.metrics().records.size(), 2u);
  EXPECT_EQ(protocol.metrics().initial_loss, initial);
  EXPECT_EQ(protocol.timing_summary().rfind("2 steps in ", 0), 0u);
}

TEST(TrainGpt2Protocol, StopsWhenAsked) {
  gpt2::Config config = gpt2::preset("small-test");
  std::vector<int32_t> grid(Gpt2Protocol::kBatch * (Gpt2Protocol::kSeq + 1), 1);
  Gpt2ProtocolOptions o;
  o.steps = 5;
  Gpt2Protocol protocol(config, gpt2::init_params(config, 1), grid, o);
  EXPECT_EQ(protocol.run(nullptr, [] { return true; }), 1);
  EXPECT_TRUE(protocol.metrics().records.empty());
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
