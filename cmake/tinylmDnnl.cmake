# oneDNN (libdnnl, from Debian) as the imported target tinylm::dnnl. Found by hand: its own
# CMake package wants OpenCL headers that only its GPU runtime needs. Included by the build
# (src/CMakeLists.txt) and by the installed package (tinylmConfig.cmake), so tinylm's exported
# link interface names this target, found again on the machine that uses the package, and no
# path of the machine that built it.
if(NOT TARGET tinylm::dnnl)
  find_path(TINYLM_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
  find_library(TINYLM_DNNL_LIBRARY dnnl)
  if(TINYLM_DNNL_INCLUDE_DIR AND TINYLM_DNNL_LIBRARY)
    add_library(tinylm::dnnl UNKNOWN IMPORTED)
    set_target_properties(tinylm::dnnl PROPERTIES
      IMPORTED_LOCATION "${TINYLM_DNNL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TINYLM_DNNL_INCLUDE_DIR}")
  endif()
endif()
