#pragma once
// The compute shaders (kernels/vulkan/shaders/*.comp), compiled to SPIR-V by glslc at build
// time and embedded by cmake/embed_spirv.cmake, which generates the definition.
#include <cstdint>
#include <span>
#include <string_view>

namespace tinylm::kernels::vulkan {

// The SPIR-V words of shaders/<name>.comp; empty when there is no such shader.
std::span<const uint32_t> shader_spirv(std::string_view name);

}  // namespace tinylm::kernels::vulkan
