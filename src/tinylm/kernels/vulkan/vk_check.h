#pragma once
// The one way kernels/vulkan/ calls Vulkan: every VkResult checked, a failure a tinylm::Error of
// one line naming the call and the result ("Vulkan: vkCreateDevice failed:
// VK_ERROR_OUT_OF_DEVICE_MEMORY"). Included by kernels/vulkan/*.cpp only: no header that other
// code includes may bring in <vulkan/vulkan.h>.
#include "tinylm/kernels/vulkan/vk_api.h"

namespace tinylm::kernels::vulkan {

// "VK_ERROR_DEVICE_LOST"; null for a code this build does not name.
const char* result_name(VkResult r);

// Throws Error unless r is VK_SUCCESS.
void check_vk(VkResult r, const char* call);

}  // namespace tinylm::kernels::vulkan
