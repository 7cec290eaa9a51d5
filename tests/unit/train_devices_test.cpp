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
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/train/gpt2_checkpoint.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_config.h"

namespace tinylm::train {
namespace {

constexpr int kBatch = 4, kSeq = 32, kAccum = 2;

// A tiny GPT-2 on `devices` replicas, each planned for its shard.
Replicas<float> tiny_gpt2(int devices, float dropout) {
  Gpt2Checkpoint ck = load_gpt2(test::source_path("tests/fixtures/gpt2/tiny"));
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

// Where the matrix products promise it (kernels/matmul/gemm.h: not at the avx2 level), a
// step gives the same bits on any number of threads; elsewhere the same step within
// tolerance.
TEST(TrainDevices, SameBitsOnAnyNumberOfThreads) {
  for (const int devices : {1, 2}) {
    const Step one = step(devices, 0.1f, 1);
    for (const int threads : {2, 3}) {
      const Step got = step(devices, 0.1f, threads);
      const std::string what =
          std::to_string(devices) + " devices, " + std::to_string(threads) + " threads";
      if (!kernels::gemm_same_bits_on_any_threads()) {
        expect_close(got, one, what);
        continue;
      }
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
  RunConfig c = defaults_for("gpt2");
  c.data = {"x.txt"};
  c.batch = 6;
  c.devices = 4;
  try {
    validate(c);
    FAIL() << "accepted --batch 6 --devices 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--devices 4"), std::string::npos) << e.what();
  }
  c.devices = 3;
  EXPECT_NO_THROW(validate(c));
}

}  // namespace
}  // namespace tinylm::train
