// GPT-2 as a Trainable on a Vulkan device (gpt2_trainable.h: gpt2_device_trainable).
#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/kernels/vulkan/elementwise.h"
#include "tinylm/kernels/vulkan/optim.h"
#include "tinylm/models/gpt2/trainer_vulkan.h"
#include "tinylm/train/gpt2_trainable.h"

namespace tinylm::train {
namespace {

namespace vk = kernels::vulkan;

// Without optimizer_on_device() the parameters go up once per step (the loop's optimizer changed
// them on the host) and the gradient comes down once, after the last micro-batch. With it, the
// parameters go up once (and after a restore), and the update runs here.
class Gpt2DeviceTrainable final : public Trainable<float>, public DeviceOptimizer {
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

  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override {
    const int64_t n = rows.count / micro_rows;
    params_up();
    StepLoss out;
    for (int64_t a = 0; a < n; ++a) {
      out.tokens += gpt2_micro_batch(rows, a, micro_rows, trainer_.options(), inputs_, targets_);
      // The CPU trainable's keys (gpt2_trainable.cpp), so the masks are the CPU run's.
      const gpt2::DropoutKey key{seed, static_cast<uint64_t>(step * n + a + 1), rows.first_row};
      out.loss += trainer_.forward(inputs_, targets_, key);
      trainer_.backward(static_cast<float>(grad_scale / static_cast<double>(n)),
                        a == 0 ? gpt2::GradMode::overwrite : gpt2::GradMode::accumulate);
    }
    if (!on_device_) {
      trainer_.download_grads(grads_);
      if (grad_done_) grad_done_(0, grads_.size());
    }
    out.loss /= static_cast<double>(n);
    out.objective = out.loss;
    return out;
  }

  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override {
    const float rate = trainer_.options().dropout;
    trainer_.set_dropout(0.0f);
    params_up();
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

  // ---- DeviceOptimizer: the loop's update on the device buffers (device_layout(), whose gaps
  // hold zeros: zero gradients, moments and parameters, which every update leaves zero).
  DeviceOptimizer* optimizer_on_device() override {
    on_device_ = true;
    return this;
  }
  bool scale_and_check(double factor) override {
    return vk::scale_and_check(*gpu_, trainer_.grads(), scratch(), factor, count());
  }
  double grad_norm() override {
    return std::sqrt(
        static_cast<double>(vk::sum_squares(*gpu_, scratch(), trainer_.grads(), count())));
  }
  void use_adam(const optim::AdamConfig& config, std::span<const uint8_t> decay) override {
    adam_ = config;
    // Runs of tensors that decay alike, over the device layout (a run spans the gaps between).
    const ParamLayout& host = trainer_.layout();
    const ParamLayout& dev = trainer_.device_layout();
    segments_.clear();
    for (size_t i = 0; i < dev.entries().size(); ++i) {
      const bool decays = decay[host.entries()[i].offset] != 0;
      const size_t begin = dev.entries()[i].offset, end = begin + dev.entries()[i].numel;
      if (!segments_.empty() && segments_.back().decays == decays)
        segments_.back().end = end;
      else
        segments_.push_back({begin, end, decays});
    }
    m_ = std::make_unique<vk::Buffer>(*gpu_, count() * sizeof(float));
    v_ = std::make_unique<vk::Buffer>(*gpu_, count() * sizeof(float));
    vk::fill(*gpu_, *m_, 0.0f, count());
    vk::fill(*gpu_, *v_, 0.0f, count());
  }
  void adam_step(double lr, int64_t t) override {
    check(m_ != nullptr, "gpt2: an Adam step on the device before use_adam");
    kernels::AdamStep s = optim::adam_step_at(adam_, lr, t);
    for (const Segment& seg : segments_) {
      s.decay = seg.decays ? lr * adam_.weight_decay : 0.0;
      const auto view = [&](vk::Buffer& b) {
        return vk::View(b, seg.begin * sizeof(float), (seg.end - seg.begin) * sizeof(float));
      };
      vk::adam_update(*gpu_, view(trainer_.params()), view(trainer_.grads()), view(*m_), view(*v_),
                      static_cast<int64_t>(seg.end - seg.begin), s);
    }
  }
  void sgd_step(double lr) override {
    vk::sgd_update(*gpu_, trainer_.params(), trainer_.grads(), count(), lr);
  }
  void download_params() override { trainer_.download_params(params_); }
  void download_state(std::span<float> m, std::span<float> v) override {
    download_params();
    if (m_ && !m.empty()) {
      trainer_.download_like_params(*m_, m);
      trainer_.download_like_params(*v_, v);
    }
  }
  void upload_state(std::span<const float> m, std::span<const float> v) override {
    trainer_.upload_params(params_);
    uploaded_ = true;
    if (m_ && !m.empty()) {
      trainer_.upload_like_params(*m_, m);
      trainer_.upload_like_params(*v_, v);
    }
  }

 private:
  // The host's parameters to the device: every pass while the loop updates them on the host,
  // the first pass only while it updates them here.
  void params_up() {
    if (on_device_ && uploaded_) return;
    trainer_.upload_params(params_);
    uploaded_ = true;
  }
  int64_t count() const { return static_cast<int64_t>(trainer_.device_layout().size()); }
  vk::Buffer& scratch() {
    if (!scratch_) {
      scratch_ = std::make_unique<vk::Buffer>(
          *gpu_, static_cast<size_t>(vk::reduce_words(count())) * sizeof(uint32_t));
    }
    return *scratch_;
  }

  struct Segment {
    size_t begin, end;
    bool decays;
  };
  std::shared_ptr<kernels::vulkan::Context> gpu_;  // before trainer_: it outlives the buffers
  gpt2::DeviceTrainer trainer_;
  std::vector<float> params_, grads_;
  std::vector<int32_t> inputs_, targets_;
  bool on_device_ = false, uploaded_ = false;
  optim::AdamConfig adam_;
  std::vector<Segment> segments_;
  std::unique_ptr<vk::Buffer> m_, v_, scratch_;
};

}  // namespace

void check_gpt2_fits_gpu(int gpu, const gpt2::Config& config, const gpt2::TrainerOptions& options,
                         int64_t replicas) {
  const gpt2::DeviceNeeds one = gpt2::DeviceTrainer::needs(config, options);
  const vk::GpuNeed bound[] = {
      {"the model's largest tensor spans", one.largest_tensor, "the model is too large for it"},
      {"the logits of a micro-batch span", one.largest_activation, "lower --batch or --seq-len"}};
  // One replica runs the optimizer on the device (Gpt2DeviceTrainable), with its moments there.
  const uint64_t total =
      one.bytes * static_cast<uint64_t>(replicas) + (replicas == 1 ? one.optimizer_bytes : 0);
  vk::check_gpu_fits(gpu, {"training", total, "lower --batch, --seq-len or the model's size"},
                     bound);
}

std::unique_ptr<Trainable<float>> gpt2_device_trainable(
    std::shared_ptr<kernels::vulkan::Context> gpu, const gpt2::Config& config,
    std::vector<float> params, gpt2::TrainerOptions options) {
  check(gpu != nullptr, "gpt2: no GPU given");
  return std::make_unique<Gpt2DeviceTrainable>(std::move(gpu), config, std::move(params), options);
}

}  // namespace tinylm::train
