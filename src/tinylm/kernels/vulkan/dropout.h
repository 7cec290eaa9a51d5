#pragma once
// Dropout as compute shaders with the CPU's counter-based masks (kernels/activation/dropout.h),
// bit for bit: Philox4x32-10 in 32-bit integers, so the mask of (seed, step, site, element) is
// the same on every device and on the CPU, whatever the sharding (DropoutSite::first).
//
// Masks on the device are packed four per uint word: element e in byte e mod 4 of word e / 4,
// 1 to keep and 0 to drop, the bytes of a last word past n 0. Downloaded, the buffer's first n
// bytes are the CPU's uint8 mask. A mask buffer holds mask_words(n) words.
//
// Numerics: one product per kept element (x * scale, scale = 1 / (1 - rate) computed in float
// on the host as the CPU's float kernel does), dropped elements +0: the CPU's float bits, but
// for results a device flushes to zero (Vulkan leaves subnormals to the device).
#include <cstdint>

#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

inline int64_t mask_words(int64_t n) { return (n + 3) / 4; }

// The packed mask of elements [0, n). rate in [0, 1); where.first + n <= 2^34.
void dropout_mask(Context& context, View mask, int64_t n, float rate, DropoutSite where);

// y = x * mask / (1 - rate) and the mask for the backward. y may be x.
void dropout_forward(Context& context, View y, View mask, View x, int64_t n, float rate,
                     DropoutSite where);

// dx = dy * mask / (1 - rate). dx may be dy.
void dropout_backward(Context& context, View dx, View dy, View mask, int64_t n, float rate);

}  // namespace tinylm::kernels::vulkan
