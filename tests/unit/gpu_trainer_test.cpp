// GPT-2 training on the GPU (models/gpt2/trainer_vulkan.h: the CPU trainer's steps on the Vulkan
// backend) against the CPU trainer and PyTorch's gradients (tests/fixtures/gpt2/train, made by
// tools/gen_gpt2_train_fixtures.py): the tiny model, a 4 x 64 batch, f32 / bf16 / f16 compute,
// dropout with the CPU's masks, both gradient modes; the same bytes run after run. Skipped,
// with the reason, where the build has no Vulkan or there is no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/models/gpt2/trainer.h"
#ifdef TINYLM_HAVE_VULKAN
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/models/gpt2/trainer_vulkan.h"
#include "tinylm/train/gpt2_trainable.h"
#endif

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

namespace vk = kernels::vulkan;

struct Batch {
  checkpoints::Gpt2Checkpoint model;
  std::vector<int32_t> inputs, targets;  // 4 x 64 each
  io::SafetensorsFile expected;          // PyTorch's gradients

  static const Batch& get() {
    static const Batch b;
    return b;
  }

 private:
  Batch()
      : model(checkpoints::load_gpt2(test::source_path("tests/fixtures/gpt2/tiny"))),
        expected(io::SafetensorsFile::open(
            test::source_path("tests/fixtures/gpt2/train/expected.safetensors"))) {
    const auto ids = nlohmann::json::parse(
        test::read_text(test::source_path("tests/fixtures/gpt2/train/tokens.json")))["ids"];
    for (const auto& row : ids) {
      for (size_t t = 0; t + 1 < row.size(); ++t) {
        inputs.push_back(row[t].get<int32_t>());
        targets.push_back(row[t + 1].get<int32_t>());
      }
    }
  }
};

TrainerOptions options(DType compute = DType::f32, float dropout = 0.0f) {
  return {.batch_size = 4, .seq_len = 64, .dropout = dropout, .compute = compute};
}

// ||a - b|| / ||b|| over each tensor of the layout; the worst, and its name.
double worst_error(const ParamLayout& layout, const std::vector<float>& a,
                   const std::vector<float>& b, std::string& name) {
  double worst = 0;
  for (const ParamEntry& e : layout.entries()) {
    double num = 0, den = 0;
    for (size_t i = e.offset; i < e.offset + e.numel; ++i) {
      num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      den += double(b[i]) * b[i];
    }
    const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (err > worst) {
      worst = err;
      name = e.name;
    }
  }
  return worst;
}

class GpuTrainer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
    context_ = std::make_unique<vk::Context>(0);
  }

  struct Run {
    float loss;
    std::vector<float> grads, logits;
  };
  // One forward and backward on the device (grads written, then once more accumulated when
  // `twice`).
  Run device_run(TrainerOptions o, DropoutKey key = {}, bool twice = false) {
    const Batch& b = Batch::get();
    DeviceTrainer t(*context_, b.model.config, o);
    t.upload_params(b.model.params);
    Run r;
    r.loss = t.forward(b.inputs, b.targets, key);
    r.logits = t.logits();
    t.backward(1.0f, GradMode::overwrite);
    if (twice) {
      t.forward(b.inputs, b.targets, key);
      t.backward(1.0f, GradMode::accumulate);
    }
    r.grads.resize(b.model.params.size());
    t.download_grads(r.grads);
    std::vector<float> back(b.model.params.size());
    t.download_params(back);
    EXPECT_EQ(back, b.model.params) << "the parameters round-trip through the device";
    return r;
  }
  Run cpu_run(TrainerOptions o, DropoutKey key = {}) {
    const Batch& b = Batch::get();
    Trainer t(b.model.config, o);
    Run r;
    r.loss = t.forward(b.model.params, b.inputs, b.targets, key);
    r.logits.assign(t.logits().begin(), t.logits().end());
    r.grads.assign(b.model.params.size(), 0.0f);
    t.backward(r.grads, 1.0f, GradMode::overwrite);
    return r;
  }

  std::unique_ptr<vk::Context> context_;
};

TEST_F(GpuTrainer, F32MatchesTheCpuAndPyTorchWithTheSameBitsEachRun) {
  const Batch& b = Batch::get();
  const Run gpu = device_run(options()), cpu = cpu_run(options());
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * cpu.loss);
  double logit_diff = 0, logit_max = 0;
  for (size_t i = 0; i < cpu.logits.size(); ++i) {
    logit_diff = std::max(logit_diff, std::abs(double(gpu.logits[i]) - cpu.logits[i]));
    logit_max = std::max(logit_max, std::abs(double(cpu.logits[i])));
  }
  EXPECT_LT(logit_diff / logit_max, 1e-4);  // the bound for logits
  std::string name;
  const ParamLayout layout = param_layout(b.model.config);
  EXPECT_LT(worst_error(layout, gpu.grads, cpu.grads, name), 1e-4) << name;
  // Against PyTorch: the CPU trainer's documented f32 tolerance (gpt2_train_test.cpp).
  std::vector<float> torch(b.model.params.size());
  for (const ParamEntry& e : layout.entries()) {
    const std::vector<float> g = b.expected.read_f32("grad." + e.name, e.shape);
    std::copy(g.begin(), g.end(), torch.begin() + static_cast<std::ptrdiff_t>(e.offset));
  }
  EXPECT_LT(worst_error(layout, gpu.grads, torch, name), 1e-4) << name;

  const Run again = device_run(options());
  EXPECT_EQ(again.loss, gpu.loss);
  EXPECT_EQ(again.grads, gpu.grads) << "the same bytes run after run";
}

// Overwrite ignores what the gradient held (the same bytes as the first backward), accumulate
// adds the new gradient to it (rounding in its own order: twice the gradient within f32).
TEST_F(GpuTrainer, OverwriteAndAccumulateModes) {
  const Batch& b = Batch::get();
  const Run once = device_run(options()), twice = device_run(options(), {}, true);
  std::vector<float> doubled(once.grads.size());
  for (size_t i = 0; i < once.grads.size(); ++i) doubled[i] = 2.0f * once.grads[i];
  std::string name;
  EXPECT_LT(worst_error(param_layout(b.model.config), twice.grads, doubled, name), 1e-6) << name;
  EXPECT_NE(twice.grads, doubled) << "accumulated in place, not doubled";

  DeviceTrainer t(*context_, b.model.config, options());
  t.upload_params(b.model.params);
  for (int i = 0; i < 2; ++i) {
    t.forward(b.inputs, b.targets);
    t.backward(1.0f, GradMode::overwrite);
  }
  std::vector<float> again(once.grads.size());
  t.download_grads(again);
  EXPECT_EQ(again, once.grads);
}

TEST_F(GpuTrainer, DropoutUsesTheCpuMasks) {
  const DropoutKey key{.seed = 7, .step = 3, .first_row = 0};
  const Run gpu = device_run(options(DType::f32, 0.1f), key),
            cpu = cpu_run(options(DType::f32, 0.1f), key);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * cpu.loss);
  std::string name;
  EXPECT_LT(worst_error(param_layout(Batch::get().model.config), gpu.grads, cpu.grads, name), 1e-4)
      << name;
  // Another step draws other masks: a different loss.
  const Run other = device_run(options(DType::f32, 0.1f), {.seed = 7, .step = 4, .first_row = 0});
  EXPECT_NE(other.loss, gpu.loss);
}

// bf16 and f16 compute round the products' operands as the CPU does; the sums' order differs,
// so the bound is the half types' (gpt2_train_test.cpp's mixed-precision tolerances).
TEST_F(GpuTrainer, HalfComputeMatchesTheCpu) {
  for (const DType t : {DType::bf16, DType::f16}) {
    const Run gpu = device_run(options(t)), cpu = cpu_run(options(t));
    EXPECT_NEAR(gpu.loss, cpu.loss, 1e-3 * cpu.loss) << dtype_name(t);
    std::string name;
    EXPECT_LT(worst_error(param_layout(Batch::get().model.config), gpu.grads, cpu.grads, name),
              2e-2)
        << dtype_name(t) << " " << name;
  }
}

// A step, dropout and f16 compute included, under the Khronos validation layer: it reports
// nothing.
TEST_F(GpuTrainer, TheValidationLayerReportsNothing) {
  const Batch& b = Batch::get();
  vk::Context checked(0, vk::Validation::on);
  DeviceTrainer t(checked, b.model.config, options(DType::f16, 0.1f));
  t.upload_params(b.model.params);
  t.forward(b.inputs, b.targets, {.seed = 1, .step = 1, .first_row = 0});
  t.backward(1024.0f, GradMode::overwrite);
  std::vector<float> grads(b.model.params.size());
  t.download_grads(grads);
  const std::vector<std::string> messages = checked.validation_messages();
  EXPECT_TRUE(messages.empty()) << messages.size() << " messages, the first: " << messages.front();
}

// What a shape takes of a device is counted without one, and training a device cannot hold is
// refused in one line (train and train-gpt2 ask before writing anything).
TEST_F(GpuTrainer, TrainingTheDeviceCannotHoldIsRefused) {
  const Batch& b = Batch::get();
  const DeviceNeeds tiny = DeviceTrainer::needs(b.model.config, options());
  const size_t params = param_layout(b.model.config).size() * sizeof(float);
  EXPECT_GE(tiny.bytes, 2 * params);
  // The logits, 256 rows of 1000, are the largest array; wte the largest tensor.
  EXPECT_EQ(tiny.largest_activation, size_t{256} * 1000 * sizeof(float));
  EXPECT_EQ(tiny.largest_tensor, size_t{1000} * 64 * sizeof(float));
  DeviceTrainer t(*context_, b.model.config, options());
  EXPECT_EQ(tiny.bytes - 2 * t.device_layout().size() * sizeof(float), t.activation_bytes());
  // An optimizer on the device: Adam's two moments, as large as the parameters there.
  EXPECT_EQ(tiny.optimizer_bytes, 2 * t.device_layout().size() * sizeof(float));
  train::check_gpt2_fits_gpu(0, b.model.config, options(), 1);

  // GPT-2 124M on 512 rows of 1024: hundreds of GB of activations, more than any GPU has.
  const TrainerOptions huge{.batch_size = 512, .seq_len = 1024};
  test::expect_error([&] { train::check_gpt2_fits_gpu(0, preset("124M"), huge, 1); },
                     {"--device gpu:0: training takes about ", " of device memory, '"});
  // One array wider than one binding may span, where the device's limit is below its memory.
  const vk::DeviceInfo device = vk::list_devices().devices[0];
  Config wide = b.model.config;
  wide.vocab_size = static_cast<int>(device.max_binding_bytes / (256 * sizeof(float)) + 1);
  const DeviceNeeds w = DeviceTrainer::needs(wide, options());
  if (w.bytes < device.device_local_bytes) {
    test::expect_error([&] { train::check_gpt2_fits_gpu(0, wide, options(), 1); },
                       {"--device gpu:0: the logits of a micro-batch span "});
  }
}

TEST_F(GpuTrainer, BadInputsAreOneLineErrors) {
  const Batch& b = Batch::get();
  DeviceTrainer t(*context_, b.model.config, options());
  test::expect_error([&] { t.upload_params(std::vector<float>(3)); },
                     {"gpt2 device trainer: 3 parameters given, the model has"});
  std::vector<int32_t> bad = b.inputs;
  bad[5] = 1000;
  t.upload_params(b.model.params);
  test::expect_error([&] { t.forward(bad, b.targets); },
                     {"gpt2 trainer: input id 1000 at 5 is outside the vocabulary [0, 1000)"});
  test::expect_error([&] { t.backward(); }, {"gpt2 trainer: backward() needs a forward() first"});
}

#endif

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
