#pragma once
// The Vulkan devices this machine offers, as `tinylm devices` and `tinylm --version` report
// them. No Vulkan header here: this is all a build without Vulkan has of kernels/vulkan/
// (no_vulkan.cpp), and all the CLI needs.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tinylm::kernels::vulkan {

enum class DeviceKind { discrete, integrated, virtual_gpu, cpu, other };

inline const char* device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::discrete:
      return "discrete";
    case DeviceKind::integrated:
      return "integrated";
    case DeviceKind::virtual_gpu:
      return "virtual";
    case DeviceKind::cpu:
      return "CPU";
    case DeviceKind::other:
      break;
  }
  return "other";
}

struct DeviceInfo {
  int index = 0;  // in the driver's enumeration order: what a device number means
  std::string name;
  DeviceKind kind = DeviceKind::other;
  std::string api_version;          // "1.3.230"
  uint64_t device_local_bytes = 0;  // the device-local heaps together
  uint32_t subgroup_size = 0;
  // The optional features tinylm's shaders would use.
  bool shader_float16 = false;      // f16 arithmetic
  bool shader_int8 = false;         // int8 arithmetic
  bool storage_16bit = false;       // 16-bit values in storage buffers (f16 and bf16 weights)
  bool cooperative_matrix = false;  // VK_NV_cooperative_matrix: tensor cores
};

// The devices found, or why there are none: "built without Vulkan", "no Vulkan driver" (the
// loader found no driver, or none would start) or "no device".
struct DeviceList {
  std::vector<DeviceInfo> devices;
  std::string why_none;
};

bool built_with_vulkan();

// Asks the Vulkan loader afresh each call (it starts and ends an instance).
DeviceList list_devices();

// An amount of memory for people: "512 MiB", "2.0 GiB".
inline std::string memory_text(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char text[32];
  if (mib >= 1024)
    std::snprintf(text, sizeof text, "%.1f GiB", mib / 1024);
  else
    std::snprintf(text, sizeof text, "%.0f MiB", mib);
  return text;
}

}  // namespace tinylm::kernels::vulkan
