#pragma once
// The Vulkan API as kernels/vulkan/ calls it: the headers without prototypes, and a pointer for
// each function it uses, filled from libvulkan.so.1 when the process first needs it. tinylm
// does not link the loader, so a binary built with Vulkan starts (and runs on the CPU) on a
// machine without it. Within namespace tinylm::kernels::vulkan an unqualified vkFoo(...) names
// the pointer. Included by kernels/vulkan/*.cpp only (through vk_check.h).
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

// Every core function tinylm calls (the loader exports each; extension functions such as the
// debug messenger's come from vkGetInstanceProcAddr).
#define TINYLM_VK_FUNCTIONS(X)                \
  X(vkGetInstanceProcAddr)                    \
  X(vkCreateInstance)                         \
  X(vkDestroyInstance)                        \
  X(vkEnumerateInstanceLayerProperties)       \
  X(vkEnumeratePhysicalDevices)               \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkCreateDevice)                           \
  X(vkDestroyDevice)                          \
  X(vkDeviceWaitIdle)                         \
  X(vkGetDeviceQueue)                         \
  X(vkQueueSubmit)                            \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkResetFences)                            \
  X(vkWaitForFences)                          \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkFreeCommandBuffers)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkResetCommandBuffer)                     \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkResetDescriptorPool)                    \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkAllocateDescriptorSets)                 \
  X(vkUpdateDescriptorSets)                   \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdPushConstants)                       \
  X(vkCmdDispatch)                            \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdCopyBuffer)

namespace tinylm::kernels::vulkan {

#define TINYLM_VK_DECLARE(name) extern PFN_##name name;
TINYLM_VK_FUNCTIONS(TINYLM_VK_DECLARE)
#undef TINYLM_VK_DECLARE

// Loads the Vulkan loader (libvulkan.so.1, or the file TINYLM_VULKAN_LOADER names) and every
// function above, once per process (later calls return the first answer). Returns "" when all
// are there, else why not, in a line.
const std::string& load_vulkan();

}  // namespace tinylm::kernels::vulkan
