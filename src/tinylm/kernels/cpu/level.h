#pragma once
// Compiling a kernel source once per instruction-set level.
//
// CMake compiles every kernel source (kernels/<op>/*.cpp) once per level, with TINYLM_LEVEL
// set to one of the values below (only the generic level on other architectures). A source
// includes this header, and kernels/cpu/vec.h, after all its other includes, and then puts
// its kernels between TINYLM_LEVEL_BEGIN and TINYLM_LEVEL_END:
//
//  - the code there is in the level's own namespace (tinylm::kernels::generic, ::avx2,
//    ::avx512), so no function of one level can be linked in place of another's;
//  - it is compiled for the level's instructions by a target pragma, not by command-line
//    flags. The standard library's inline functions (std::vector, std::fill, ...) are
//    declared before the region and stay baseline code in every pass, so the linker can never
//    keep an AVX-512 copy of one of them for a caller on an AVX2 machine.
//
// The generic pass (TINYLM_LEVEL_ONCE) also compiles the public entry points, which call the
// active level's function through TINYLM_DISPATCH, and whatever is the same at every level.
#include "tinylm/kernels/cpu/isa.h"

#define TINYLM_LEVEL_GENERIC 0
#define TINYLM_LEVEL_AVX2 1
#define TINYLM_LEVEL_AVX512 2

#if !defined(TINYLM_LEVEL)
#error \
    "kernel sources are compiled once per level: TINYLM_LEVEL must be defined (see src/CMakeLists.txt)"
#endif

#define TINYLM_LEVEL_ONCE (TINYLM_LEVEL == TINYLM_LEVEL_GENERIC)

#define TINYLM_PRAGMA(x) _Pragma(#x)
#define TINYLM_PRAGMA_EXPANDED(x) TINYLM_PRAGMA(x)  // x with its macros expanded first
#if TINYLM_LEVEL == TINYLM_LEVEL_AVX512
#define TINYLM_LEVEL_NS avx512
#define TINYLM_LEVEL_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"
#elif TINYLM_LEVEL == TINYLM_LEVEL_AVX2
#define TINYLM_LEVEL_NS avx2
#define TINYLM_LEVEL_TARGET "avx2,fma,f16c"
#elif TINYLM_LEVEL == TINYLM_LEVEL_GENERIC
#define TINYLM_LEVEL_NS generic
#else
#error "unknown TINYLM_LEVEL"
#endif

// TINYLM_TARGET_PUSH_OF(features) ... TINYLM_TARGET_POP_OF: the functions between compiled for
// `features` (a target string); TINYLM_TARGET_PUSH ... TINYLM_TARGET_POP: for the level's own.
#if defined(__clang__)
#define TINYLM_TARGET_PUSH_OF(features) \
  TINYLM_PRAGMA_EXPANDED(               \
      clang attribute push(__attribute__((target(features))), apply_to = function))
#define TINYLM_TARGET_POP_OF TINYLM_PRAGMA(clang attribute pop)
#elif defined(__GNUC__)
#define TINYLM_TARGET_PUSH_OF(features) \
  TINYLM_PRAGMA(GCC push_options) TINYLM_PRAGMA_EXPANDED(GCC target(features))
#define TINYLM_TARGET_POP_OF TINYLM_PRAGMA(GCC pop_options)
#else
#error "the kernel levels need GCC or clang"
#endif
#if defined(TINYLM_LEVEL_TARGET)
#define TINYLM_TARGET_PUSH TINYLM_TARGET_PUSH_OF(TINYLM_LEVEL_TARGET)
#define TINYLM_TARGET_POP TINYLM_TARGET_POP_OF
#else
#define TINYLM_TARGET_PUSH
#define TINYLM_TARGET_POP
#endif

#define TINYLM_LEVEL_BEGIN TINYLM_TARGET_PUSH namespace tinylm::kernels::TINYLM_LEVEL_NS {
#define TINYLM_LEVEL_END \
  }                      \
  TINYLM_TARGET_POP

// Small helpers of the vector types: always inlined, so no 64-byte value crosses a call.
#define TINYLM_INLINE inline __attribute__((always_inline))

// TINYLM_LEVELS(declaration): the declaration in every level's namespace, for the entry points
// of the TINYLM_LEVEL_ONCE pass (inside namespace tinylm::kernels). TINYLM_DISPATCH(fn, args):
// returns fn(args) of the active level.
#if defined(TINYLM_X86_LEVELS)
#define TINYLM_LEVELS(...) \
  namespace generic {      \
  __VA_ARGS__;             \
  }                        \
  namespace avx2 {         \
  __VA_ARGS__;             \
  }                        \
  namespace avx512 {       \
  __VA_ARGS__;             \
  }
#define TINYLM_DISPATCH(fn, ...)             \
  switch (::tinylm::kernels::active_isa()) { \
    case ::tinylm::kernels::Isa::avx512:     \
      return avx512::fn(__VA_ARGS__);        \
    case ::tinylm::kernels::Isa::avx2:       \
      return avx2::fn(__VA_ARGS__);          \
    case ::tinylm::kernels::Isa::generic:    \
      break;                                 \
  }                                          \
  return generic::fn(__VA_ARGS__)
#else
#define TINYLM_LEVELS(...) \
  namespace generic {      \
  __VA_ARGS__;             \
  }
#define TINYLM_DISPATCH(fn, ...) return generic::fn(__VA_ARGS__)
#endif
