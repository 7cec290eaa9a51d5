# The Vulkan compute backend (src/tinylm/kernels/vulkan/). TINYLM_VULKAN is AUTO (built when the
# Vulkan loader and headers and glslc are found), ON (not found is an error) or OFF. Sets
# TINYLM_WITH_VULKAN, and defines tinylm_embed_shaders() for the GLSL compute shaders.
set(TINYLM_WITH_VULKAN FALSE)
string(TOUPPER "${TINYLM_VULKAN}" tinylm_vulkan_mode)
if(tinylm_vulkan_mode STREQUAL "AUTO")
  find_package(Vulkan QUIET COMPONENTS glslc)
  if(Vulkan_FOUND AND TARGET Vulkan::glslc)
    set(TINYLM_WITH_VULKAN TRUE)
  endif()
elseif(TINYLM_VULKAN)
  find_package(Vulkan QUIET COMPONENTS glslc)
  if(NOT Vulkan_FOUND OR NOT TARGET Vulkan::glslc)
    message(FATAL_ERROR "TINYLM_VULKAN=ON, but the Vulkan loader and headers (libvulkan-dev) or "
                        "the shader compiler glslc (glslc) were not found: scripts/install-deps.sh "
                        "installs them")
  endif()
  set(TINYLM_WITH_VULKAN TRUE)
endif()
message(STATUS "tinylm: Vulkan compute backend ${TINYLM_WITH_VULKAN} (TINYLM_VULKAN=${TINYLM_VULKAN})")

# tinylm_embed_shaders(OUT <file.cpp> SHADERS <a.comp>...): compiles each shader to SPIR-V with
# glslc at build time (warnings are errors) and writes OUT, a source that defines
# tinylm::kernels::vulkan::shader_spirv() (kernels/vulkan/shaders.h) over all of them, each
# known by its file name without .comp.
function(tinylm_embed_shaders)
  cmake_parse_arguments(arg "" "OUT" "SHADERS" ${ARGN})
  set(spirv_files)
  foreach(shader IN LISTS arg_SHADERS)
    get_filename_component(name "${shader}" NAME_WE)
    set(spirv "${CMAKE_CURRENT_BINARY_DIR}/shaders/${name}.spv")
    # Vulkan 1.2: what the shaders need, and what lavapipe and every current GPU driver offer.
    # The depfile names the shared *.glsl files a shader #includes.
    add_custom_command(
      OUTPUT "${spirv}"
      COMMAND Vulkan::glslc --target-env=vulkan1.2 -O -Werror -MD -MF "${spirv}.d" -o "${spirv}"
              "${shader}"
      DEPENDS "${shader}"
      DEPFILE "${spirv}.d"
      COMMENT "Compiling ${name}.comp to SPIR-V"
      VERBATIM)
    list(APPEND spirv_files "${spirv}")
  endforeach()
  string(JOIN "|" spirv_arg ${spirv_files})
  add_custom_command(
    OUTPUT "${arg_OUT}"
    COMMAND ${CMAKE_COMMAND} "-DIN=${spirv_arg}" "-DOUT=${arg_OUT}"
            -P "${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake"
    DEPENDS ${spirv_files} "${PROJECT_SOURCE_DIR}/cmake/embed_spirv.cmake"
    COMMENT "Embedding the SPIR-V shaders"
    VERBATIM)
endfunction()
