#pragma once
// What the host sampler (generate/sampler.h) needs from logits left on the device: greedy
// decoding's index per row, and the temperature's probabilities per row, to download.
//
// Numerics: argmax_rows is exact (kernels/reduce/argmax.h's index: the first of the largest
// values, NaN never chosen unless first). softmax_temperature is f32, one workgroup per row: the
// max, then the sum of exp((l - max) / temperature), each a fixed-order reduction (strided
// per-invocation values, then a halving tree; no atomics), so a device and driver give the same
// bits run after run; within the CPU softmax's bounds of the double softmax
// (tests/unit/gpu_sample_test.cpp).
//
// The sampler draws in double from the logits themselves (golden generations depend on its
// exact sums), so for parity it takes the downloaded logits row, or argmax_rows' index when
// greedy. The probabilities are Python's random.choices weights up to a factor and f32
// rounding (~1e-6 relative): a sampler fed them draws the same token except when its random
// number falls within that much of a boundary between two tokens' cumulative sums.
#include <cstdint>

#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// best[r] = argmax_j logits[r][j] (int32), as kernels::argmax. logits: (rows, V), V >= 1.
void argmax_rows(Context& context, View best, View logits, int64_t rows, int64_t V);

// probs[r][j] = exp((logits[r][j] - max) / temperature) / sum_j (the same), max over the row;
// a NaN logit weighs 0. temperature > 0 (0 is greedy: argmax_rows). probs may be logits.
void softmax_temperature(Context& context, View probs, View logits, int64_t rows, int64_t V,
                         float temperature);

}  // namespace tinylm::kernels::vulkan
