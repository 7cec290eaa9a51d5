// kernels/vulkan/devices.h in a build without Vulkan (TINYLM_VULKAN=OFF, or the loader or glslc
// missing at configure time): no devices, and the reason.
#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::kernels::vulkan {

bool built_with_vulkan() { return false; }

DeviceList list_devices() { return {{}, "built without Vulkan"}; }

std::string device_name(const Context&) { return ""; }

void check_gpu(int) {
  fail(
      "--device gpu: this tinylm was built without Vulkan (-DTINYLM_VULKAN=ON with libvulkan-dev "
      "and glslc; scripts/install-deps.sh installs them)");
}

void check_gpu_fits(int index, const GpuNeed&, std::span<const GpuNeed>, std::string_view) {
  check_gpu(index);  // says why there is none
}

std::shared_ptr<Context> open_gpu(int index) {
  check_gpu(index);
  return nullptr;
}

}  // namespace tinylm::kernels::vulkan
