// GPT-2 as a Trainable on a Vulkan device (gpt2_trainable.h: gpt2_device_trainable).
#include <algorithm>
#include <memory>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/models/gpt2/trainer_vulkan.h"
#include "tinylm/train/gpt2_trainable.h"

namespace tinylm::train {
namespace {

class Gpt2DeviceTrainable final : public Trainable<float> {
 public:
  Gpt2DeviceTrainable(std::shared_ptr<kernels::vulkan::Context> gpu, const gpt2::Config& config,
                      std::vector<float> params, gpt2::TrainerOptions options)
      : gpu_(std::move(gpu)), trainer_(*gpu_, config, options), params_(std::move(params)) {
    check(params_.size() == trainer_.layout().size(), "gpt2: ", params_.size(),
          " parameters given, the model has ", trainer_.layout().size());
    grads_.assign(params_.size(), 0.0f);
    const size_t n = static_cast<size_t>(options.batch_size) * static_cast<size_t>(options.seq_len);
    inputs_.resize(n);
    targets_.resize(n);
  }

  std::string_view arch() const override { return "gpt2"; }
  const ParamLayout& layout() const override { return trainer_.layout(); }
  std::span<float> params() override { return params_; }
  std::span<float> grads() override { return grads_; }

  // The parameters go up once per step (the optimizer changed them on the host), the gradient
  // comes down once, after the last micro-batch.
  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override {
    const int64_t n = rows.count / micro_rows;
    trainer_.upload_params(params_);
    StepLoss out;
    for (int64_t a = 0; a < n; ++a) {
      out.tokens += gpt2_micro_batch(rows, a, micro_rows, trainer_.options(), inputs_, targets_);
      // The CPU trainable's keys (gpt2_trainable.cpp), so the masks are the CPU run's.
      const gpt2::DropoutKey key{seed, static_cast<uint64_t>(step * n + a + 1), rows.first_row};
      out.loss += trainer_.forward(inputs_, targets_, key);
      trainer_.backward(static_cast<float>(grad_scale / static_cast<double>(n)),
                        a == 0 ? gpt2::GradMode::overwrite : gpt2::GradMode::accumulate);
    }
    trainer_.download_grads(grads_);
    if (grad_done_) grad_done_(0, grads_.size());
    out.loss /= static_cast<double>(n);
    out.objective = out.loss;
    return out;
  }

  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override {
    const float rate = trainer_.options().dropout;
    trainer_.set_dropout(0.0f);
    trainer_.upload_params(params_);
    const int64_t n = rows.count / micro_rows;
    StepLoss out;
    for (int64_t a = 0; a < n; ++a) {
      out.tokens += gpt2_micro_batch(rows, a, micro_rows, trainer_.options(), inputs_, targets_);
      out.loss += trainer_.forward(inputs_, targets_);
    }
    trainer_.set_dropout(rate);
    out.loss /= static_cast<double>(n);
    out.objective = out.loss;
    return out;
  }

  double flops_per_token() const override {
    return gpt2_flops_per_token(trainer_.config(), params_.size(), trainer_.options().seq_len);
  }

 private:
  std::shared_ptr<kernels::vulkan::Context> gpu_;  // before trainer_: it outlives the buffers
  gpt2::DeviceTrainer trainer_;
  std::vector<float> params_, grads_;
  std::vector<int32_t> inputs_, targets_;
};

}  // namespace

void check_gpt2_fits_gpu(int gpu, const gpt2::Config& config, const gpt2::TrainerOptions& options,
                         int64_t replicas) {
  kernels::vulkan::check_gpu(gpu);
  const kernels::vulkan::DeviceInfo device =
      kernels::vulkan::list_devices().devices[static_cast<size_t>(gpu)];
  const gpt2::DeviceNeeds one = gpt2::DeviceTrainer::needs(config, options);
  const uint64_t total = one.bytes * static_cast<uint64_t>(replicas);
  using kernels::vulkan::memory_text;
  check(total <= device.device_local_bytes, "--device gpu:", gpu, ": training takes about ",
        memory_text(total), " of device memory, '", device.name, "' has ",
        memory_text(device.device_local_bytes), " (lower --batch, --seq-len or the model's size)");
  const uint64_t most = device.max_binding_bytes;
  check(one.largest_tensor <= most, "--device gpu:", gpu, ": the model's largest tensor spans ",
        memory_text(one.largest_tensor), ", '", device.name, "' binds at most ", memory_text(most),
        " (its maxStorageBufferRange): the model is too large for it");
  check(one.largest_activation <= most, "--device gpu:", gpu, ": the logits of a micro-batch span ",
        memory_text(one.largest_activation), ", '", device.name, "' binds at most ",
        memory_text(most), " (its maxStorageBufferRange; lower --batch or --seq-len)");
}

std::unique_ptr<Trainable<float>> gpt2_device_trainable(
    std::shared_ptr<kernels::vulkan::Context> gpu, const gpt2::Config& config,
    std::vector<float> params, gpt2::TrainerOptions options) {
  check(gpu != nullptr, "gpt2: no GPU given");
  return std::make_unique<Gpt2DeviceTrainable>(std::move(gpu), config, std::move(params), options);
}

}  // namespace tinylm::train
