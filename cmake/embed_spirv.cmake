# cmake "-DIN=a.spv|b.spv" -DOUT=shaders.cpp -P embed_spirv.cmake
# Writes a C++ source defining tinylm::kernels::vulkan::shader_spirv() (kernels/vulkan/shaders.h)
# over the SPIR-V files IN, each as a uint32_t array named by its file name without .spv.
# file(READ ... HEX) instead of xxd, which is not everywhere.
if(NOT DEFINED IN OR NOT DEFINED OUT)
  message(FATAL_ERROR "usage: cmake \"-DIN=a.spv|b.spv\" -DOUT=FILE.cpp -P embed_spirv.cmake")
endif()
string(REPLACE "|" ";" spirv_files "${IN}")
set(arrays "")
set(entries "")
foreach(spirv IN LISTS spirv_files)
  get_filename_component(name "${spirv}" NAME_WE)
  file(READ "${spirv}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR words "${hex_length} / 8")
  math(EXPR remainder "${hex_length} % 8")
  if(words EQUAL 0 OR NOT remainder EQUAL 0)
    message(FATAL_ERROR "embed_spirv.cmake: ${spirv} is not SPIR-V (${hex_length} hex digits)")
  endif()
  # SPIR-V is a stream of little-endian words: bytes b0 b1 b2 b3 make 0xb3b2b1b0. Eight words
  # a line. (CMake's regular expressions have no {n}.)
  string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," hex "${hex}")
  string(REPEAT "0x........u," 8 line)
  string(REGEX REPLACE "(${line})" "\\1\n    " hex "${hex}")
  string(STRIP "${hex}" hex)
  string(APPEND arrays "constexpr uint32_t k_${name}[${words}] = {\n    ${hex}\n};\n\n")
  string(APPEND entries "    {\"${name}\", k_${name}},\n")
endforeach()
file(WRITE "${OUT}.tmp"
"// Generated from the compute shaders by embed_spirv.cmake at build time: do not edit.
#include <cstdint>
#include <span>
#include <string_view>

#include \"tinylm/kernels/vulkan/shaders.h\"

namespace tinylm::kernels::vulkan {
namespace {

${arrays}struct Entry {
  std::string_view name;
  std::span<const uint32_t> code;
};

constexpr Entry kShaders[] = {
${entries}};

}  // namespace

std::span<const uint32_t> shader_spirv(std::string_view name) {
  for (const Entry& e : kShaders) {
    if (e.name == name) return e.code;
  }
  return {};
}

}  // namespace tinylm::kernels::vulkan
")
# Replaced only when changed, so an unchanged shader rebuilds nothing.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
