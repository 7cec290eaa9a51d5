#include "tinylm/kernels/vulkan/vk_api.h"

#include <dlfcn.h>

#include <cstdlib>

#include "tinylm/core/error.h"

namespace tinylm::kernels::vulkan {

#define TINYLM_VK_DEFINE(name) PFN_##name name = nullptr;
TINYLM_VK_FUNCTIONS(TINYLM_VK_DEFINE)
#undef TINYLM_VK_DEFINE

namespace {

std::string load() {
  // TINYLM_VULKAN_LOADER names a loader outside the library path (one carried to a machine).
  const char* named = std::getenv("TINYLM_VULKAN_LOADER");
  const std::string path = named && *named ? named : "libvulkan.so.1";
  // Never closed: the functions stay valid for the life of the process.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    return cat("cannot load the Vulkan loader ", path, " (Debian: libvulkan1)",
               why ? cat(": ", why) : "");
  }
#define TINYLM_VK_LOAD(name)                                  \
  name = reinterpret_cast<PFN_##name>(dlsym(library, #name)); \
  if (!name) return cat("the Vulkan loader ", path, " has no " #name);
  TINYLM_VK_FUNCTIONS(TINYLM_VK_LOAD)
#undef TINYLM_VK_LOAD
  return "";
}

}  // namespace

const std::string& load_vulkan() {
  static const std::string why_not = load();
  return why_not;
}

}  // namespace tinylm::kernels::vulkan
