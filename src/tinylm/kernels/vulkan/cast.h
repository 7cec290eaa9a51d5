#pragma once
// Conversions between f32 and the 16-bit types as compute shaders (kernels/cast/cast.h).
//
// Halves travel packed two per uint word (no Vulkan 16-bit feature needed): element i in the
// low (i even) or high (i odd) 16 bits of word i / 2, the high half of an odd count's last word
// 0. Downloaded, the buffer's first n halves are the CPU's uint16 array (little-endian). A
// buffer of n halves holds half_words(n) words.
//
// Contract: exact. The conversions are core/dtype.h's, step for step in integer arithmetic
// (round to nearest even, NaN stays NaN and quiet, beyond the f16 range +-inf; subnormals
// exact whatever the device's denormal mode): the CPU's bits.
#include <cstdint>

#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

enum class Half { f16, bf16 };

inline int64_t half_words(int64_t n) { return (n + 1) / 2; }

// dst (packed halves) = half(src) over n elements.
void convert_to_half(Context& context, View dst, View src, int64_t n, Half type);
// dst (floats) = float(src) over n packed halves.
void convert_from_half(Context& context, View dst, View src, int64_t n, Half type);
// dst = float(half(src)): round_to_f16 / round_to_bf16. dst may be src.
void round_to_half(Context& context, View dst, View src, int64_t n, Half type);

}  // namespace tinylm::kernels::vulkan
