#pragma once
// GPT-2 as a Trainable: the parameters (f32 master weights), a gradient buffer, and a
// gpt2::Trainer planned for micro-batches of batch_size rows of seq_len + 1 tokens.
#include <memory>
#include <vector>

#include "tinylm/models/gpt2/trainer.h"
#include "tinylm/train/trainable.h"

namespace tinylm::kernels::vulkan {
class Context;
}

namespace tinylm::train {

class Gpt2Trainable final : public Trainable<float> {
 public:
  // Takes the parameters (gpt2::param_layout(config) order).
  Gpt2Trainable(const gpt2::Config& config, std::vector<float> params,
                gpt2::TrainerOptions options);

  std::string_view arch() const override { return "gpt2"; }
  const ParamLayout& layout() const override { return trainer_.layout(); }
  std::span<float> params() override { return params_; }
  std::span<float> grads() override { return grads_; }
  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override;
  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override;
  double flops_per_token() const override;

  const gpt2::Config& config() const { return trainer_.config(); }
  const gpt2::TrainerProfile& profile() const { return trainer_.profile(); }

 private:
  gpt2::Trainer trainer_;
  std::vector<float> params_, grads_;
  std::vector<int32_t> inputs_, targets_;
};

// Micro-batch a of `rows` (micro_rows rows of T + 1 tokens, B = micro_rows) as a trainer's
// inputs and targets (B x T each); returns the positions predicted. Error for other shapes.
int64_t gpt2_micro_batch(const Rows& rows, int64_t a, int64_t micro_rows,
                         const gpt2::TrainerOptions& options, std::span<int32_t> inputs,
                         std::span<int32_t> targets);
// Forward + backward floating-point operations per trained token (Trainable::flops_per_token).
double gpt2_flops_per_token(const gpt2::Config& config, size_t params, int64_t seq_len);

// GPT-2 trained on a Vulkan device (built with TINYLM_VULKAN): the forward and backward run
// there (gpt2::DeviceTrainer); the master weights, the gradient the loop reads and the
// optimizer stay on the host, so checkpoints, resume, clipping and the loss scaler are the
// CPU run's. Each step uploads the parameters and downloads the gradient.
std::unique_ptr<Trainable<float>> gpt2_device_trainable(
    std::shared_ptr<kernels::vulkan::Context> gpu, const gpt2::Config& config,
    std::vector<float> params, gpt2::TrainerOptions options);

// Refuses, in one line before anything is written, training that GPU `gpu` (an index) cannot
// hold: `replicas` DeviceTrainers of this shape on it, and with one the optimizer's moments
// (their bytes against its memory, the largest binding against its maxStorageBufferRange).
void check_gpt2_fits_gpu(int gpu, const gpt2::Config& config, const gpt2::TrainerOptions& options,
                         int64_t replicas);

// `devices` GPT-2 replicas for train/replicas.h, each planned with `per_shard` (its share of
// the batch); the parameters are copied into all but the last, which takes them. With `gpu`
// every replica runs on that device.
std::vector<std::unique_ptr<Trainable<float>>> gpt2_replicas(
    const gpt2::Config& config, std::vector<float> params, const gpt2::TrainerOptions& per_shard,
    int64_t devices, const std::shared_ptr<kernels::vulkan::Context>& gpu = nullptr);

}  // namespace tinylm::train
