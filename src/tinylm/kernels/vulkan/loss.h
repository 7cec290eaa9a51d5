#pragma once
// Softmax cross-entropy as compute shaders, on device buffers: mirrors kernels/loss/
// cross_entropy.h's float forward and backward (the same formula and arguments), for training
// with the logits on the device.
//
// Numerics: f32. One workgroup per row: the max, then the sum of exp(l - max), each a
// fixed-order reduction (per-invocation strided values, then a halving tree over 256
// invocations; no atomics, no subgroup operations), so a device and driver give the same bits
// run after run. exp and log are the device's (Vulkan allows exp 3 + 2|x| ulp, log 3 ulp).
// Against the double reference, the CPU kernel's bounds hold (tests/unit/gpu_loss_test.cpp).
// The total loss is not summed on the device: sum_losses downloads the per-row losses and adds
// them in row order in double, as the CPU kernel returns it.
#include <cstdint>

#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// lse[r] = log(sum_j exp(logits[r][j])); losses[r] = lse[r] - logits[r][targets[r]].
// logits: (rows, V) floats; targets: (rows) int32, trusted (in [0, V)); losses, lse: (rows).
void cross_entropy_forward(Context& context, View losses, View lse, View logits, View targets,
                           int64_t rows, int64_t V);

// The sum of the first `rows` losses in row order, in double (the CPU forward's return value).
double sum_losses(View losses, int64_t rows);

// dlogits = scale * (softmax(logits) - onehot(target)) (written, not accumulated), from the
// forward's lse; dlogits may be logits. For a mean loss, scale = loss_scale / rows.
void cross_entropy_backward(Context& context, View dlogits, View logits, View lse, View targets,
                            int64_t rows, int64_t V, float scale);

}  // namespace tinylm::kernels::vulkan
