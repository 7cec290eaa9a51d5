// tinylm devices and the gpu line of tinylm --version, against what the library finds (lavapipe
// in CI; "no Vulkan device (why)" where there is none).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(CliDevices, ListsEachDeviceWithItsFeatures) {
  const kernels::vulkan::DeviceList list = kernels::vulkan::list_devices();
  const test::CommandResult r = test::run_cli("devices");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (list.devices.empty()) {
    EXPECT_EQ(r.out, "no Vulkan device (" + list.why_none + ")\n");
    return;
  }
  const std::vector<std::string> l = lines_of(r.out);
  const char* fields[] = {"  kind: ",
                          "  vulkan: ",
                          "  device-local memory: ",
                          "  largest array a shader binds (maxStorageBufferRange): ",
                          "  subgroup size: ",
                          "  f16 arithmetic (shaderFloat16): ",
                          "  int8 arithmetic (shaderInt8): ",
                          "  16-bit storage: ",
                          "  bf16: through 16-bit storage, f32 arithmetic: ",
                          "  cooperative matrices (VK_NV_cooperative_matrix): "};
  const size_t per_device = 1 + std::size(fields);
  ASSERT_EQ(l.size(), list.devices.size() * per_device) << r.out;
  for (const kernels::vulkan::DeviceInfo& d : list.devices) {
    const size_t at = static_cast<size_t>(d.index) * per_device;
    EXPECT_EQ(l[at], "device " + std::to_string(d.index) + ": " + d.name);
    for (size_t f = 0; f < std::size(fields); ++f)
      EXPECT_EQ(l[at + 1 + f].rfind(fields[f], 0), 0u) << l[at + 1 + f];
    EXPECT_EQ(l[at + 1], std::string("  kind: ") + kernels::vulkan::device_kind_name(d.kind));
    EXPECT_EQ(l[at + 4], "  largest array a shader binds (maxStorageBufferRange): " +
                             kernels::vulkan::memory_text(d.max_binding_bytes));
    EXPECT_EQ(l[at + 5], "  subgroup size: " + std::to_string(d.subgroup_size));
    EXPECT_GT(d.max_binding_bytes, 0u);
    EXPECT_GT(d.subgroup_size, 0u);
    EXPECT_GT(d.device_local_bytes, 0u);
    EXPECT_EQ(l[at + 6], std::string("  f16 arithmetic (shaderFloat16): ") +
                             (d.shader_float16 ? "yes" : "no"));
  }
}

TEST(CliDevices, VersionNamesTheGpu) {
  const kernels::vulkan::DeviceList list = kernels::vulkan::list_devices();
  const test::CommandResult r = test::run_cli("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t n = list.devices.size();
  const std::string want =
      n == 0 ? "gpu: none (" + list.why_none + ")"
             : "gpu: vulkan, " + std::to_string(n) + (n == 1 ? " device" : " devices");
  EXPECT_EQ(lines_of(r.out).back(), want) << r.out;
  if (!kernels::vulkan::built_with_vulkan()) {
    EXPECT_EQ(want, "gpu: none (built without Vulkan)");
  }
}

// A binary built with Vulkan opens the loader at run time: without one it still starts, says why
// there is no GPU, and runs on the CPU.
TEST(CliDevices, WithoutTheVulkanLoaderTheCliStartsAndSaysWhy) {
  if (!kernels::vulkan::built_with_vulkan()) GTEST_SKIP() << "built without Vulkan";
  const std::string env = "TINYLM_VULKAN_LOADER=/nonexistent/libvulkan.so.1 ";
  const std::string why =
      "cannot load the Vulkan loader /nonexistent/libvulkan.so.1 (Debian: libvulkan1)";
  const test::CommandResult version = test::run_shell(env + TINYLM_CLI_PATH + " --version");
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(lines_of(version.out).back().rfind("gpu: none (" + why, 0), 0u) << version.out;
  const test::CommandResult devices = test::run_shell(env + TINYLM_CLI_PATH + " devices");
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  EXPECT_EQ(devices.out.rfind("no Vulkan device (" + why, 0), 0u) << devices.out;
  const test::CommandResult tokens =
      test::run_shell(env + TINYLM_CLI_PATH + " tokenize --tokenizer " +
                      test::source_path("data/gpt2") + " 'Hello world'");
  EXPECT_EQ(tokens.out, "15496 995\n") << tokens.err;
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
