#pragma once
// The first ops as compute shaders, on device buffers (Views) of floats. Each mirrors the CPU
// kernel named (its formula and its accumulate contract) and records, submits and waits for its
// dispatches on the buffers' Context.
//
// Numerics: f32 throughout. Every reduction runs in a fixed order through shared memory
// (per-invocation strided sums, then a halving tree over 256 invocations; no float atomics,
// no subgroup operations, whose width varies by device), so a device and driver give the same
// bits run after run. Against the double references: the CPU kernels' bounds
// (tests/unit/gpu_ops_test.cpp).
#include <cstdint>

#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// kernels/activation/gelu.h: y = gelu(x) over n elements; y may be x.
void gelu_forward(Context& context, View y, View x, int64_t n);

// dx = dy ⊙ gelu'(x) (written, not accumulated); dx may be dy.
void gelu_backward(Context& context, View dx, View dy, View x, int64_t n);

// kernels/norm/layernorm.h: y, x: (rows, C); w, b: (C); mean, rstd: (rows), always written
// (the backward needs them).
void layernorm_forward(Context& context, View y, View mean, View rstd, View x, View w, View b,
                       int64_t rows, int64_t C, float eps);

// dx += dL/dx, dw += dL/dw, db += dL/db from dy and the forward's x, mean, rstd. dw and db sum
// over the rows in row order, one column per invocation.
void layernorm_backward(Context& context, View dx, View dw, View db, View dy, View x, View w,
                        View mean, View rstd, int64_t rows, int64_t C);

}  // namespace tinylm::kernels::vulkan
