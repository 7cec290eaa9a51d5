#pragma once
// Optimizer updates as compute shaders, on device buffers of floats (kernels/optim/adam.h and
// optim/grad_ops.h on the CPU).
//
// Numerics: each element alone, so no order to fix. Adam computes the CPU's float kernel's
// formula in f32 with the same scalars, rounded to f32 on the host, and each product, sum,
// quotient and root is rounded on its own (no fused multiply-add), so a device repeats its bits,
// and one whose quotients and roots are IEEE's (lavapipe) gives the CPU's. Against the CPU's,
// with u = 2^-24 and Vulkan's precisions (quotients 2.5 ulp, sqrt 3 ulp; 1 ulp <= 2u
// relative), plus the CPU's own rounding to float:
//   |m - m_cpu| <= 3u (|b1 m0| + |(1 - b1) g|) + u |m_cpu|
//   |v - v_cpu| <= 3u (b2 v0 + (1 - b2) g²) + u v_cpu
//   |p - p_cpu| <= 2u (|p0| + |p_cpu| + decay |p0|) + 24u |update|
//                  + (lr / c1) |m - m_cpu| / (sqrt(v / c2) + eps) + |update| |v - v_cpu| / (2 v)
// (update = lr (m / c1) / (sqrt(v / c2) + eps): 24u is the sum of its operations' precisions)
// (tests/unit/gpu_optim_test.cpp). SGD is the CPU's float loop exactly: the same bits.
#include <cstdint>

#include "tinylm/kernels/optim/adam.h"
#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// kernels/optim/adam.h: m, v updated, p -= decay p then the Adam step; g zeroed.
void adam_update(Context& context, View p, View g, View m, View v, int64_t n, const AdamStep& step);

// optim/grad_ops.h: p -= float(lr) g (g is left as it is, as on the CPU).
void sgd_update(Context& context, View p, View g, int64_t n, double lr);

}  // namespace tinylm::kernels::vulkan
