#pragma once
// Elementwise passes and the gradient buffer's reductions as compute shaders: fill (zeroing),
// the residual add, scaling, the loss scaler's unscale-and-check and clipping (optim/grad_ops.h's
// scale_and_check), the squared norm for clipping, and the accumulation window's
// accumulate_and_clear (kernels/cast/cast.h).
//
// Numerics: fill copies bits; add, scale, scale_and_check and accumulate_and_clear do one
// rounded operation per element: the CPU's float bits, but for results a device flushes to zero
// (Vulkan leaves subnormals to the device). sum_squares sums in f32 (the CPU in double) in a
// fixed order, two dispatches: workgroup k of G = min(256, ceil(n / 256)) has each of its 256
// invocations t walk elements k 256 + t + j G 256 (j = 0, 1, ...) in order, then a fixed
// halving tree; one workgroup sums the G partials with the same tree. All terms being >= 0,
// the relative error is at most (ceil(n / (256 G)) + 17) 2^-24
// (tests/unit/gpu_elementwise_test.cpp).
//
// The reductions leave their partial results in a scratch buffer of reduce_words(n) words
// (floats or flags), the result in word 0.
#include <cstdint>

#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// Workgroups of the reductions' first pass.
inline int64_t reduce_groups(int64_t n) {
  const int64_t g = (n + 255) / 256;
  return g < 1 ? 1 : (g > 256 ? 256 : g);
}
inline int64_t reduce_words(int64_t n) { return 1 + reduce_groups(n); }

// y[i] = value for i in [0, n) (its bits: -0 stays -0).
void fill(Context& context, View y, float value, int64_t n);

// y = a + b. y may be a or b.
// dst[dst_first + i] = src[src_first + i] for i < n (32-bit values as bits; element indices,
// so rows can start anywhere in their buffers). dst and src must not overlap.
void copy(Context& context, Buffer& dst, int64_t dst_first, const Buffer& src, int64_t src_first,
          int64_t n);

void add(Context& context, View y, View a, View b, int64_t n);

// y = s x. y may be x.
void scale(Context& context, View y, View x, float s, int64_t n);

// g *= float(factor) (skipped when factor is 1, as on the CPU); returns whether every result
// is finite. Unscaling (factor 1 / loss scale) and clipping (max_norm / (norm + 1e-6)).
bool scale_and_check(Context& context, View g, View scratch, double factor, int64_t n);

// Σ x² in f32, in the fixed order above (the squared global norm for clipping).
float sum_squares(Context& context, View scratch, View x, int64_t n);

// acc += src, then src = 0; with round_f16 each src value is first rounded to f16.
void accumulate_and_clear(Context& context, View acc, View src, int64_t n, bool round_f16);

}  // namespace tinylm::kernels::vulkan
