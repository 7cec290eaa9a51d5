#pragma once
// The Vulkan devices this machine offers, as `tinylm devices` and `tinylm --version` report
// them. No Vulkan header here: this is all a build without Vulkan has of kernels/vulkan/
// (no_vulkan.cpp), and all the CLI needs.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/core/error.h"

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
  uint64_t max_binding_bytes = 0;   // maxStorageBufferRange: the most one shader binding spans
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

// --device: "cpu" is -1, "gpu" device 0, "gpu:N" device N; anything else a one-line Error.
inline int parse_device(std::string_view text) {
  if (text == "cpu") return -1;
  if (text == "gpu") return 0;
  if (text.starts_with("gpu:") && text.size() > 4 && text.size() <= 8 &&
      text.find_first_not_of("0123456789", 4) == std::string_view::npos) {
    return std::stoi(std::string(text.substr(4)));
  }
  fail("--device ", text, ": cpu, gpu or gpu:N (tinylm devices lists the GPUs)");
}

// Checks that GPU `index` exists: a one-line Error naming why not when the build has no
// Vulkan, there is no device, or no such device (before a run writes anything).
void check_gpu(int index);

// What a run needs of GPU `index`: `memory` bytes of device memory in all, and each array of
// `bindings` bound by one shader (within its maxStorageBufferRange). `what` names it in the
// error (a binding's with its verb: "the logits span"), `hint` says what to change; `in`
// qualifies the amounts (" in f16"). After check_gpu's checks, a one-line Error where the
// device falls short:
//   --device gpu:N: WHAT takes about X of device memory[IN], 'NAME' has Y (HINT)
//   --device gpu:N: WHAT X[IN], 'NAME' binds at most Y (its maxStorageBufferRange; HINT)
struct GpuNeed {
  std::string what;
  uint64_t bytes = 0;
  std::string hint;
};
void check_gpu_fits(int index, const GpuNeed& memory, std::span<const GpuNeed> bindings,
                    std::string_view in = "");

class Context;
// Opens device `index` for a run (shared by what runs on it): a one-line Error naming why when
// the build has no Vulkan, there is no device, or no such device.
std::shared_ptr<Context> open_gpu(int index);
// The name of the device a Context opened.
std::string device_name(const Context& context);

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
