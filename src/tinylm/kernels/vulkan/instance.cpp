#include "tinylm/kernels/vulkan/instance.h"

#include <cstring>

#include "tinylm/core/error.h"

namespace tinylm::kernels::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool layer_installed(const char* name) {
  uint32_t count = 0;
  check_vk(vkEnumerateInstanceLayerProperties(&count, nullptr),
           "vkEnumerateInstanceLayerProperties");
  std::vector<VkLayerProperties> layers(count);
  check_vk(vkEnumerateInstanceLayerProperties(&count, layers.data()),
           "vkEnumerateInstanceLayerProperties");
  for (const VkLayerProperties& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return true;
  }
  return false;
}

// Info and verbose messages are the loader's chatter (which layers it loaded); warnings and
// errors are what a test must not see.
VKAPI_ATTR VkBool32 VKAPI_CALL record_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data,
                                              void* user) {
  auto* log = static_cast<ValidationLog*>(user);
  const char* level =
      severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  const std::lock_guard<std::mutex> lock(log->mutex);
  log->messages.push_back(cat(level, ": ", data && data->pMessage ? data->pMessage : ""));
  return VK_FALSE;  // the call that caused it goes on
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info(ValidationLog* log) {
  VkDebugUtilsMessengerCreateInfoEXT info{};
  info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = record_message;
  info.pUserData = log;
  return info;
}

}  // namespace

Instance::Instance(bool validation) {
  const std::string& why_not = load_vulkan();
  check(why_not.empty(), "Vulkan: ", why_not);
  check(!validation || layer_installed(kValidationLayer), "TINYLM_VULKAN_VALIDATION is on, but ",
        kValidationLayer, " is not installed (Debian: vulkan-validationlayers)");
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tinylm";
  app.pEngineName = "tinylm";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  // Chained, the messenger also hears about vkCreateInstance and vkDestroyInstance themselves.
  const VkDebugUtilsMessengerCreateInfoEXT messenger = messenger_info(log_.get());
  if (validation) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &messenger;
  }
  check_vk(vkCreateInstance(&info, nullptr, &instance_), "vkCreateInstance");
  if (!validation) return;
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
  const VkResult r =
      create ? create(instance_, &messenger, nullptr, &messenger_) : VK_ERROR_EXTENSION_NOT_PRESENT;
  if (r != VK_SUCCESS) {
    vkDestroyInstance(instance_, nullptr);
    check_vk(r, "vkCreateDebugUtilsMessengerEXT");
  }
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

std::vector<std::string> Instance::validation_messages() const {
  const std::lock_guard<std::mutex> lock(log_->mutex);
  return log_->messages;
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t count = 0;
  check_vk(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  // VK_INCOMPLETE cannot happen: nothing is plugged in between the two calls here.
  check_vk(vkEnumeratePhysicalDevices(instance_, &count, devices.data()),
           "vkEnumeratePhysicalDevices");
  devices.resize(count);
  return devices;
}

}  // namespace tinylm::kernels::vulkan
