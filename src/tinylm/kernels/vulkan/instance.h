#pragma once
// A Vulkan instance (Vulkan 1.2), optionally with the Khronos validation layer and a
// debug-utils messenger that records every warning and error it reports. Internal to
// kernels/vulkan/ (it includes <vulkan/vulkan.h>).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/kernels/vulkan/vk_check.h"

namespace tinylm::kernels::vulkan {

// The messages the validation layer reported, in order; shared with its callback.
struct ValidationLog {
  std::mutex mutex;
  std::vector<std::string> messages;
};

class Instance {
 public:
  // Throws Error naming the missing package when validation is asked for and the layer is not
  // installed.
  explicit Instance(bool validation);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  bool validation() const { return messenger_ != VK_NULL_HANDLE; }
  std::vector<std::string> validation_messages() const;
  std::vector<VkPhysicalDevice> physical_devices() const;

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::unique_ptr<ValidationLog> log_ = std::make_unique<ValidationLog>();
};

// An instance without validation that lives as long as the process, so the driver stays
// loaded from the first use to the end (devices.cpp says why). Throws Error where there is
// no driver, and tries again at the next call.
const Instance& resident_instance();

// What `tinylm devices` says about a device; index: its place in the enumeration (devices.cpp).
DeviceInfo describe(VkPhysicalDevice device, int index);

// The device's API version as VK_MAKE_API_VERSION packs it.
uint32_t api_version(VkPhysicalDevice device);

}  // namespace tinylm::kernels::vulkan
