#include "tinylm/kernels/vulkan/vk_check.h"

#include "tinylm/core/error.h"

namespace tinylm::kernels::vulkan {

const char* result_name(VkResult r) {
  switch (r) {
#define TINYLM_VK_RESULT(name) \
  case name:                   \
    return #name;
    TINYLM_VK_RESULT(VK_SUCCESS)
    TINYLM_VK_RESULT(VK_NOT_READY)
    TINYLM_VK_RESULT(VK_TIMEOUT)
    TINYLM_VK_RESULT(VK_EVENT_SET)
    TINYLM_VK_RESULT(VK_EVENT_RESET)
    TINYLM_VK_RESULT(VK_INCOMPLETE)
    TINYLM_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    TINYLM_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    TINYLM_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    TINYLM_VK_RESULT(VK_ERROR_DEVICE_LOST)
    TINYLM_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    TINYLM_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    TINYLM_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    TINYLM_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    TINYLM_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    TINYLM_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    TINYLM_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    TINYLM_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    TINYLM_VK_RESULT(VK_ERROR_UNKNOWN)
    TINYLM_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    TINYLM_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    TINYLM_VK_RESULT(VK_ERROR_FRAGMENTATION)
    TINYLM_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    TINYLM_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    TINYLM_VK_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
#undef TINYLM_VK_RESULT
    default:
      break;
  }
  return nullptr;
}

void check_vk(VkResult r, const char* call) {
  if (r == VK_SUCCESS) return;
  if (r == VK_ERROR_DEVICE_LOST) {
    fail("Vulkan: the GPU was lost (", call,
         ": VK_ERROR_DEVICE_LOST; its driver reset it, it hung or it was removed)");
  }
  const char* name = result_name(r);
  if (name) fail("Vulkan: ", call, " failed: ", name);
  fail("Vulkan: ", call, " failed: VkResult ", static_cast<int>(r));
}

}  // namespace tinylm::kernels::vulkan
