#include "tinylm/models/gpt2/trainer_vulkan.h"

#include <algorithm>

#include "tinylm/backend/vulkan.h"
#include "tinylm/core/error.h"
#include "tinylm/models/gpt2/train_steps.h"

namespace tinylm::gpt2 {

namespace vk = kernels::vulkan;

struct DeviceTrainer::Impl {
  ParamLayout host_layout;
  TrainSteps<float, backend::Vulkan> steps;
  vk::Buffer params, grads;

  Impl(vk::Context& context, const Config& config, TrainerOptions options)
      : host_layout(param_layout(config)),
        steps(config, options, backend::Vulkan{&context}),
        params(context, steps.layout.size() * sizeof(float)),
        grads(context, steps.layout.size() * sizeof(float)) {
    // The gaps between tensors stay zero (an optimizer over the whole buffer leaves them so).
    vk::fill(context, params, 0.0f, static_cast<int64_t>(steps.layout.size()));
    vk::fill(context, grads, 0.0f, static_cast<int64_t>(steps.layout.size()));
  }

  backend::DeviceArray<float> array(vk::Buffer& b) { return {&b, 0}; }

  // Host (packed) <-> device (aligned) order, entry by entry.
  std::vector<float> to_device(std::span<const float> host) const {
    std::vector<float> padded(steps.layout.size(), 0.0f);
    for (size_t i = 0; i < host_layout.entries().size(); ++i) {
      const ParamEntry &h = host_layout.entries()[i], &d = steps.layout.entries()[i];
      std::copy_n(host.begin() + static_cast<std::ptrdiff_t>(h.offset), h.numel,
                  padded.begin() + static_cast<std::ptrdiff_t>(d.offset));
    }
    return padded;
  }
  void upload(vk::Buffer& b, std::span<const float> host, const char* what) const {
    check(host.size() == host_layout.size(), "gpt2 device trainer: ", host.size(), " ", what,
          " given, the model has ", host_layout.size());
    const std::vector<float> padded = to_device(host);
    b.upload(std::as_bytes(std::span<const float>(padded)));
  }
  void to_host(const vk::Buffer& b, std::span<float> host, const char* what) const {
    check(host.size() == host_layout.size(), "gpt2 device trainer: ", host.size(), " ", what,
          " asked for, the model has ", host_layout.size());
    const std::vector<float> padded = vk::download_floats(b, steps.layout.size());
    for (size_t i = 0; i < host_layout.entries().size(); ++i) {
      const ParamEntry &h = host_layout.entries()[i], &d = steps.layout.entries()[i];
      std::copy_n(padded.begin() + static_cast<std::ptrdiff_t>(d.offset), h.numel,
                  host.begin() + static_cast<std::ptrdiff_t>(h.offset));
    }
  }
};

DeviceNeeds DeviceTrainer::needs(const Config& config, TrainerOptions options) {
  const TrainSteps<float, backend::Vulkan> plan(config, options, backend::Vulkan{}, false);
  uint64_t largest_tensor = 0;
  for (const ParamEntry& e : plan.layout.entries())
    largest_tensor = std::max<uint64_t>(largest_tensor, e.numel * sizeof(float));
  // The parameters and the gradients, the activations; Adam's moments, like the parameters.
  const uint64_t params = plan.layout.size() * sizeof(float);
  return {2 * params + plan.planned_bytes, largest_tensor, plan.largest_block, 2 * params};
}

DeviceTrainer::DeviceTrainer(vk::Context& context, const Config& config, TrainerOptions options)
    : impl_(std::make_unique<Impl>(context, config, options)) {}
DeviceTrainer::~DeviceTrainer() = default;
DeviceTrainer::DeviceTrainer(DeviceTrainer&&) noexcept = default;
DeviceTrainer& DeviceTrainer::operator=(DeviceTrainer&&) noexcept = default;

const Config& DeviceTrainer::config() const { return impl_->steps.config; }
const TrainerOptions& DeviceTrainer::options() const { return impl_->steps.options; }
const ParamLayout& DeviceTrainer::layout() const { return impl_->host_layout; }
const ParamLayout& DeviceTrainer::device_layout() const { return impl_->steps.layout; }
size_t DeviceTrainer::activation_bytes() const { return impl_->steps.arena.capacity(); }

void DeviceTrainer::set_dropout(float rate) {
  impl_->steps.check_dropout(rate);
  impl_->steps.options.dropout = rate;
}

void DeviceTrainer::upload_params(std::span<const float> params) {
  impl_->upload(impl_->params, params, "parameters");
}
void DeviceTrainer::download_params(std::span<float> params) const {
  impl_->to_host(impl_->params, params, "parameters");
}
void DeviceTrainer::download_grads(std::span<float> grads) const {
  impl_->to_host(impl_->grads, grads, "gradients");
}

float DeviceTrainer::forward(std::span<const int32_t> inputs, std::span<const int32_t> targets,
                             DropoutKey key) {
  return impl_->steps.forward(impl_->array(impl_->params), impl_->steps.layout.size(), inputs,
                              targets, key);
}
void DeviceTrainer::backward(float loss_scale, GradMode mode) {
  impl_->steps.backward(impl_->array(impl_->grads), impl_->steps.layout.size(), loss_scale,
                        mode == GradMode::accumulate, {});
}

namespace {
// n floats of a device array.
std::vector<float> download(backend::DeviceArray<float> a, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  a.buffer->download(std::as_writable_bytes(std::span<float>(v)),
                     static_cast<size_t>(a.first) * sizeof(float));
  return v;
}
}  // namespace

std::vector<float> DeviceTrainer::logits() const {
  return download(impl_->steps.logits, impl_->steps.BT * impl_->steps.V);
}
std::vector<float> DeviceTrainer::position_losses() const {
  return download(impl_->steps.losses, impl_->steps.BT);
}

void DeviceTrainer::upload_like_params(vk::Buffer& dst, std::span<const float> host) const {
  impl_->upload(dst, host, "values");
}
void DeviceTrainer::download_like_params(const vk::Buffer& src, std::span<float> host) const {
  impl_->to_host(src, host, "values");
}

vk::Buffer& DeviceTrainer::params() { return impl_->params; }
vk::Buffer& DeviceTrainer::grads() { return impl_->grads; }
const TrainerProfile& DeviceTrainer::profile() const { return impl_->steps.prof; }

}  // namespace tinylm::gpt2
