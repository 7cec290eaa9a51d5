// tinylm devices: the Vulkan devices tinylm can run on, and what each offers.
#include <cstdio>
#include <string>

#include "commands.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::cli {
namespace {

using kernels::vulkan::DeviceInfo;
using kernels::vulkan::memory_text;

const char* yes_no(bool b) { return b ? "yes" : "no"; }

std::string describe(const DeviceInfo& d) {
  // Vulkan has no bf16 arithmetic (Debian 12's headers know no such feature): bf16 values are
  // 16-bit words widened to f32 in the shader, which 16-bit storage makes a plain load.
  return cat(
      "device ", d.index, ": ", d.name, "\n  kind: ", kernels::vulkan::device_kind_name(d.kind),
      "\n  vulkan: ", d.api_version, "\n  device-local memory: ", memory_text(d.device_local_bytes),
      "\n  largest array a shader binds (maxStorageBufferRange): ",
      memory_text(d.max_binding_bytes), "\n  subgroup size: ", d.subgroup_size,
      "\n  f16 arithmetic (shaderFloat16): ", yes_no(d.shader_float16),
      "\n  int8 arithmetic (shaderInt8): ", yes_no(d.shader_int8),
      "\n  16-bit storage: ", yes_no(d.storage_16bit),
      "\n  bf16: through 16-bit storage, f32 arithmetic: ", yes_no(d.storage_16bit),
      "\n  cooperative matrices (VK_NV_cooperative_matrix): ", yes_no(d.cooperative_matrix), "\n");
}

}  // namespace

std::string gpu_summary() {
  const kernels::vulkan::DeviceList list = kernels::vulkan::list_devices();
  if (list.devices.empty()) return "none (" + list.why_none + ")";
  const size_t n = list.devices.size();
  return cat("vulkan, ", n, n == 1 ? " device" : " devices");
}

void register_devices(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "devices", "List the Vulkan devices (GPUs, and lavapipe on the CPU) and their features");
  cmd->callback([] {
    const kernels::vulkan::DeviceList list = kernels::vulkan::list_devices();
    if (list.devices.empty()) std::printf("no Vulkan device (%s)\n", list.why_none.c_str());
    for (const DeviceInfo& d : list.devices) std::fputs(describe(d).c_str(), stdout);
  });
}

}  // namespace tinylm::cli
