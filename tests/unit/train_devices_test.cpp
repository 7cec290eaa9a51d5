// Data parallelism in one process (train/replicas.h): a batch split into shards on replicas
// gives one device's step within float32 summation tolerance — dropout included, since each
// shard draws its rows' share of the whole batch's masks — and the same bits on any number of
// threads. (That sharding keeps a run on PyTorch's numbers is in train_loop_fixture_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/distributed/grad_exchange.h"
#include "tinylm/families/family.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_config.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

constexpr int kBatch = 4, kSeq = 32, kAccum = 2;

// A tiny GPT-2 on `devices` replicas, each planned for its shard.
Replicas<float> tiny_gpt2(int devices, float dropout) {
  checkpoints::Gpt2Checkpoint ck =
      checkpoints::load_gpt2(test::source_path("tests/fixtures/gpt2/tiny"));
  return Replicas<float>(gpt2_replicas(ck.config, std::move(ck.params),
                                       {kBatch / devices, kSeq, dropout, DType::f32}, devices));
}

// kAccum micro-batches of kBatch rows of kSeq + 1 seeded token ids.
std::vector<int32_t> token_rows() {
  std::mt19937 rng(7);
  std::vector<int32_t> ids(static_cast<size_t>(kAccum * kBatch * (kSeq + 1)));
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 1000);
  return ids;
}

struct Step {
  StepLoss loss;
  std::vector<float> grads;
};

Step step(int devices, float dropout, int threads) {
  set_num_threads(threads);
  Replicas<float> model = tiny_gpt2(devices, dropout);
  const std::vector<int32_t> ids = token_rows();
  Step out;
  out.loss = model.forward_backward({ids, kAccum * kBatch, kSeq + 1}, kBatch, 1.0, 11, 3);
  out.grads.assign(model.grads().begin(), model.grads().end());
  set_num_threads(0);
  return out;
}

void expect_close(const Step& got, const Step& want, const std::string& what) {
  EXPECT_LE(std::abs(got.loss.loss - want.loss.loss), 1e-5 * std::abs(want.loss.loss)) << what;
  EXPECT_EQ(got.loss.tokens, want.loss.tokens) << what;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.grads.size(); ++i) {
    diff += std::pow(double{got.grads[i]} - want.grads[i], 2);
    norm += std::pow(double{want.grads[i]}, 2);
  }
  EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm)) << what << ": gradient";
}

TEST(TrainDevices, ShardsGiveOneDevicesStepWithinTolerance) {
  for (const float dropout : {0.0f, 0.1f}) {
    const Step one = step(1, dropout, 2);
    for (const int devices : {2, 4}) {
      expect_close(step(devices, dropout, 2), one,
                   std::to_string(devices) + " devices, dropout " + std::to_string(dropout));
    }
  }
}

// The test above has teeth: a shard that drew its own masks (as if it were row 0 of the
// batch) instead of its rows' share would move the loss ten times the tolerance or more.
TEST(TrainDevices, DropoutMasksDependOnTheGlobalRow) {
  Replicas<float> model = tiny_gpt2(2, 0.1f);
  const std::vector<int32_t> ids = token_rows();
  const Rows second_half{std::span(ids).subspan(2 * (kSeq + 1), 2 * (kSeq + 1)), 2, kSeq + 1, 2};
  Rows as_first = second_half;
  as_first.first_row = 0;
  const double global = model.replica(1).forward_backward(second_half, 2, 1.0, 11, 3).loss;
  const double local = model.replica(1).forward_backward(as_first, 2, 1.0, 11, 3).loss;
  EXPECT_GT(std::abs(global - local), 1e-4 * std::abs(global));
}

// A step gives the same bits on any number of threads (kernels/matmul/gemm.h), at every level.
TEST(TrainDevices, SameBitsOnAnyNumberOfThreads) {
  for (const int devices : {1, 2}) {
    const Step one = step(devices, 0.1f, 1);
    for (const int threads : {2, 3}) {
      const Step got = step(devices, 0.1f, threads);
      const std::string what =
          std::to_string(devices) + " devices, " + std::to_string(threads) + " threads";
      EXPECT_EQ(std::memcmp(&got.loss.loss, &one.loss.loss, sizeof(double)), 0) << what;
      EXPECT_EQ(got.grads, one.grads) << what;
    }
  }
}

TEST(TrainDevices, ReplicasAreEqualAfterEachPass) {
  Replicas<float> model = tiny_gpt2(2, 0.0f);
  model.params()[5] += 1.0f;  // as an optimizer step would
  const std::vector<int32_t> ids = token_rows();
  model.forward_backward({ids, kAccum * kBatch, kSeq + 1}, kBatch, 1.0, 0, 0);
  const std::span<const float> a = model.replica(0).params(), b = model.replica(1).params();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
}

TEST(TrainDevices, ABatchThatDoesNotSplitIsAnError) {
  RunConfig c = defaults_for(families::trainable(), "gpt2");
  c.data = {"x.txt"};
  c.batch = 6;
  c.devices = 4;
  try {
    validate(families::trainable(), c);
    FAIL() << "accepted --batch 6 --devices 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--devices 4"), std::string::npos) << e.what();
  }
  c.devices = 3;
  EXPECT_NO_THROW(validate(families::trainable(), c));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

// GPT-2's backward reports every gradient range once, only in the last micro-batch, and each
// holds its final values when reported: what the exchange sends early is what it would send
// at the end.
TEST(GradExchange, Gpt2ReportsEachRangeOnceWithItsFinalValues) {
  Replicas<float> one = tiny_gpt2(1, 0.1f);
  Trainable<float>& model = one.replica(0);
  struct Seen {
    size_t begin, end;
    std::vector<float> values;
  };
  std::vector<Seen> seen;
  model.report_grads([&](size_t begin, size_t end) {
    seen.push_back({begin,
                    end,
                    {model.grads().begin() + static_cast<std::ptrdiff_t>(begin),
                     model.grads().begin() + static_cast<std::ptrdiff_t>(end)}});
  });
  const std::vector<int32_t> ids = token_rows();
  model.forward_backward({ids, kAccum * kBatch, kSeq + 1}, kBatch, 1.0, 3, 0);
  const size_t n = model.grads().size();
  ASSERT_GE(seen.size(), 3u);  // ln_f, the blocks, the embeddings
  size_t covered = 0, next_end = n;
  for (const Seen& s : seen) {
    EXPECT_EQ(s.end, next_end) << "ranges come in backward order, each below the last";
    next_end = s.begin;
    covered += s.end - s.begin;
    EXPECT_EQ(std::memcmp(s.values.data(), model.grads().data() + s.begin,
                          s.values.size() * sizeof(float)),
              0)
        << "[" << s.begin << ", " << s.end << ") changed after it was reported";
  }
  EXPECT_EQ(next_end, 0u);
  EXPECT_EQ(covered, n);
}

// Bucket by bucket on the exchange thread, in whatever ranges are reported (some never), the
// mean is the same bits as one exchange of the whole, which sums each element in shard order.
TEST(GradExchange, BucketsGiveTheBitsOfOneExchange) {
  const size_t n = 1000;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> shards(3, std::vector<float>(n));
  for (auto& s : shards)
    for (float& x : s) x = normal(rng);
  std::vector<const float*> parts;
  for (const auto& s : shards) parts.push_back(s.data());
  std::vector<float> expected(n);
  for (size_t i = 0; i < n; ++i) expected[i] = (shards[0][i] + shards[1][i] + shards[2][i]) / 3.0f;

  std::vector<float> out(n, -1.0f);
  distributed::GradExchange<float> exchange(distributed::Comm::world(), /*bucket=*/64);
  for (int step = 0; step < 2; ++step) {  // the thread serves step after step
    std::fill(out.begin(), out.end(), -1.0f);
    exchange.start(parts, out.data(), n, 16);
    exchange.done(900, 1000);  // a bucket alone (over 64)
    exchange.done(880, 900);   // merged with the next (adjacent) ...
    exchange.done(850, 880);   // ... into one of 50
    exchange.done(100, 200);   // not adjacent: the pending one goes first
    // [0, 100) and [200, 850) never reported: finish() exchanges them.
    EXPECT_GE(exchange.finish(), 0.0);
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), n * sizeof(float)), 0) << "step " << step;
  }
  exchange.start(parts, out.data(), n, 16);
  exchange.done(0, 10);
  exchange.done(5, 20);  // overlaps: a bug in the caller
  EXPECT_THROW(exchange.finish(), Error);
  exchange.start(parts, out.data(), n, 16);
  EXPECT_THROW(exchange.done(10, n + 1), Error);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
