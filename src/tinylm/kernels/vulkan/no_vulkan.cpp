// kernels/vulkan/devices.h in a build without Vulkan (TINYLM_VULKAN=OFF, or the loader or glslc
// missing at configure time): no devices, and the reason.
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::kernels::vulkan {

bool built_with_vulkan() { return false; }

DeviceList list_devices() { return {{}, "built without Vulkan"}; }

}  // namespace tinylm::kernels::vulkan
