// kernels/vulkan/devices.h with Vulkan: what each device is and offers.
#include <cstring>

#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/instance.h"

namespace tinylm::kernels::vulkan {
namespace {

std::string version_string(uint32_t v) {
  return cat(VK_API_VERSION_MAJOR(v), ".", VK_API_VERSION_MINOR(v), ".", VK_API_VERSION_PATCH(v));
}

DeviceKind kind_of(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return DeviceKind::discrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return DeviceKind::integrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceKind::virtual_gpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return DeviceKind::cpu;
    default:
      return DeviceKind::other;
  }
}

bool has_extension(VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  check_vk(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr),
           "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> extensions(count);
  check_vk(vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()),
           "vkEnumerateDeviceExtensionProperties");
  for (const VkExtensionProperties& e : extensions) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

}  // namespace

uint32_t api_version(VkPhysicalDevice device) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(device, &p);
  return p.apiVersion;
}

DeviceInfo describe(VkPhysicalDevice device, int index) {
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(device, &props);

  DeviceInfo info;
  info.index = index;
  info.name = props.properties.deviceName;
  info.kind = kind_of(props.properties.deviceType);
  info.api_version = version_string(props.properties.apiVersion);
  info.subgroup_size = subgroup.subgroupSize;
  info.max_binding_bytes = props.properties.limits.maxStorageBufferRange;

  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(device, &memory);
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h) {
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes += memory.memoryHeaps[h].size;
  }

  // The 1.2 feature structures are defined only for devices of Vulkan 1.2 and later, which is
  // also what tinylm's shaders need; older devices are listed with no optional features.
  if (props.properties.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceVulkan11Features v11{};
    v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    VkPhysicalDeviceVulkan12Features v12{};
    v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    v12.pNext = &v11;
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features.pNext = &v12;
    vkGetPhysicalDeviceFeatures2(device, &features);
    info.shader_float16 = v12.shaderFloat16;
    info.shader_int8 = v12.shaderInt8;
    info.storage_16bit = v11.storageBuffer16BitAccess;
  }
  info.cooperative_matrix = has_extension(device, "VK_NV_cooperative_matrix");
  return info;
}

bool built_with_vulkan() { return true; }

const Instance& resident_instance() {
  // Never destroyed, on purpose: the loader unloads the driver when its last instance ends,
  // and a driver loaded again pays its start-up again (lavapipe: LLVM's); Mesa's one-time
  // allocations, unreachable once it is unloaded, would also read as leaks under LeakSanitizer.
  static const Instance* const instance = new Instance(false);
  return *instance;
}

DeviceList list_devices() {
  if (const std::string& why = load_vulkan(); !why.empty()) return {{}, why};
  std::vector<VkPhysicalDevice> handles;
  try {
    handles = resident_instance().physical_devices();
  } catch (const Error&) {
    // The loader without a driver (VK_ERROR_INCOMPATIBLE_DRIVER), or a driver that will not
    // start: either way, nothing to run on.
    return {{}, "no Vulkan driver"};
  }
  DeviceList list;
  for (size_t i = 0; i < handles.size(); ++i)
    list.devices.push_back(describe(handles[i], static_cast<int>(i)));
  if (list.devices.empty()) list.why_none = "no device";
  return list;
}

}  // namespace tinylm::kernels::vulkan
