#pragma once
// GPT-2 training on a Vulkan device: the CPU trainer's forward and backward (train_steps.h) on
// backend/vulkan.h, so the model is written once. The parameters and gradients live in device
// buffers in an aligned layout (each tensor on a multiple of backend::Vulkan::kParamAlign
// elements, the gaps zero); they cross to and from the host in param_layout's packed order.
// Built only with TINYLM_VULKAN (TINYLM_HAVE_VULKAN).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tinylm/core/param_store.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/models/gpt2/config.h"
#include "tinylm/models/gpt2/trainer.h"

namespace tinylm::gpt2 {

// What a DeviceTrainer of this shape takes of a device: all its buffers together, and the
// largest ranges one op binds (a device's maxStorageBufferRange must hold them): a parameter
// tensor, an array of activations. An optimizer on the device adds `optimizer_bytes` (Adam's
// two moments, in the parameters' layout).
struct DeviceNeeds {
  uint64_t bytes = 0, largest_tensor = 0, largest_activation = 0, optimizer_bytes = 0;
};

class DeviceTrainer {
 public:
  // Counted without a device; Error for a bad config or options, as the constructor.
  static DeviceNeeds needs(const Config& config, TrainerOptions options);

  // Throws Error as BasicTrainer's constructor does, or when the device runs out of memory.
  DeviceTrainer(kernels::vulkan::Context& context, const Config& config, TrainerOptions options);
  ~DeviceTrainer();
  DeviceTrainer(DeviceTrainer&&) noexcept;
  DeviceTrainer& operator=(DeviceTrainer&&) noexcept;

  const Config& config() const;
  const TrainerOptions& options() const;
  const ParamLayout& layout() const;         // the host's: param_layout(config)
  const ParamLayout& device_layout() const;  // the device buffers': aligned
  size_t activation_bytes() const;           // the device arena
  void set_dropout(float rate);              // [0, 1) or Error

  // The parameters (host layout) to the device; and the parameters or gradients back.
  void upload_params(std::span<const float> params);
  void download_params(std::span<float> params) const;
  void download_grads(std::span<float> grads) const;

  // As BasicTrainer's, on the device parameters and gradients.
  float forward(std::span<const int32_t> inputs, std::span<const int32_t> targets,
                DropoutKey key = {});
  void backward(float loss_scale = 1.0f, GradMode mode = GradMode::accumulate);
  // The last forward's logits and per-position losses (downloaded).
  std::vector<float> logits() const;
  std::vector<float> position_losses() const;

  // The device buffers (device_layout()), for an optimizer on the device.
  kernels::vulkan::Buffer& params();
  kernels::vulkan::Buffer& grads();
  // Any array shaped as the parameters (an optimizer's moments) between the host layout and a
  // device buffer in device_layout() (whose gaps the upload leaves zero).
  void upload_like_params(kernels::vulkan::Buffer& dst, std::span<const float> host) const;
  void download_like_params(const kernels::vulkan::Buffer& src, std::span<float> host) const;

  const TrainerProfile& profile() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinylm::gpt2
