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
// The generic pass (TINYLM_LEVEL_ONCE) also compiles whatever is the same at every level, and
// the entry points, which run the active level's function (TINYLM_PUBLIC_ENTRIES below).
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

// Entry points. Each function a source compiles at every level is listed once, in its
// TINYLM_LEVEL_ONCE pass inside namespace tinylm::kernels, as X(declaration, name, (arguments)):
//
//   #define TINYLM_GELU_ENTRIES(X)                              (a backslash ends each line)
//     X(void gelu_forward(float* y, const float* x, int64_t n), gelu_forward, (y, x, n))
//     X(void gelu_backward(float* dx, const float* dy, const float* x, int64_t n), gelu_backward,
//       (dx, dy, x, n))
//   TINYLM_PUBLIC_ENTRIES(TINYLM_GELU_ENTRIES)
//
// Both macros below declare each listed function in every level's namespace.
// TINYLM_PUBLIC_ENTRIES also defines it here, as the public function the op's header declares:
// one switch on active_isa() that runs the active level's. TINYLM_ACTIVE_ENTRIES defines that
// switch as active::name instead (static, always inlined), for a public function that checks
// or converts its arguments first. An entry that differs from the header's declaration or the
// level's definition leaves a function undefined, and the link fails.
#define TINYLM_LEVEL_DECLARATION(declaration, name, args) declaration;
#if defined(TINYLM_X86_LEVELS)
#define TINYLM_DECLARE_AT_LEVELS(list) \
  namespace generic {                  \
  list(TINYLM_LEVEL_DECLARATION)       \
  }                                    \
  namespace avx2 {                     \
  list(TINYLM_LEVEL_DECLARATION)       \
  }                                    \
  namespace avx512 {                   \
  list(TINYLM_LEVEL_DECLARATION)       \
  }
#define TINYLM_RUN_ACTIVE_LEVEL(name, args)        \
  switch (::tinylm::kernels::active_isa()) {       \
    case ::tinylm::kernels::Isa::avx512:           \
      return ::tinylm::kernels::avx512::name args; \
    case ::tinylm::kernels::Isa::avx2:             \
      return ::tinylm::kernels::avx2::name args;   \
    case ::tinylm::kernels::Isa::generic:          \
      break;                                       \
  }                                                \
  return ::tinylm::kernels::generic::name args
#else
#define TINYLM_DECLARE_AT_LEVELS(list) \
  namespace generic {                  \
  list(TINYLM_LEVEL_DECLARATION)       \
  }
#define TINYLM_RUN_ACTIVE_LEVEL(name, args) return ::tinylm::kernels::generic::name args
#endif

#define TINYLM_PUBLIC_DISPATCH(declaration, name, args) \
  declaration { TINYLM_RUN_ACTIVE_LEVEL(name, args); }
#define TINYLM_PUBLIC_ENTRIES(list) \
  TINYLM_DECLARE_AT_LEVELS(list)    \
  list(TINYLM_PUBLIC_DISPATCH)

#define TINYLM_ACTIVE_DISPATCH(declaration, name, args) \
  static TINYLM_INLINE declaration { TINYLM_RUN_ACTIVE_LEVEL(name, args); }
#define TINYLM_ACTIVE_ENTRIES(list) \
  TINYLM_DECLARE_AT_LEVELS(list)    \
  namespace active {                \
  list(TINYLM_ACTIVE_DISPATCH)      \
  }
