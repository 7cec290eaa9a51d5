#pragma once
// EvermindLM's initial weights, from our own counter-based RNG (docs/evermind.md):
//
//   normal(key, stream, i): (w0, w1, w2, w3) = Philox4x32-10(counter = {lo32(i), hi32(i), stream,
//   0},
//                                                          key = {lo32(key), hi32(key)})
//     u1 = ((w0 >> 5) · 2^26 + (w1 >> 6) + 1) / 2^53        in (0, 1]
//     u2 = ((w2 >> 5) · 2^26 + (w3 >> 6)) / 2^53            in [0, 1)
//     z  = sqrt(−2 ln u1) · cos(2π u2)                       (Box–Muller, in double)
//
//   emb[i]                    = 0.02 · normal(seed, 0, i)
//   layer l's router[i]       = 0.02 · normal(seed + 1 + l, 0, i)
//   layer l's shared.up[i]    = 0.02 · normal(seed + 1 + l, 1, i),  shared.down: stream 2
//   layer l's expert e up[i]  = 0.02 · normal(seed + 1 + l, 3 + 2e, i), down: stream 4 + 2e
//   conv kernels: tap 0 = 1, the other taps 0 (identity); norm gains 1
//
// i is the element's row-major index inside its tensor; values are computed in double and
// rounded once to the model's type, so float and double models start from the same numbers.
#include <cstdint>
#include <span>

#include "tinylm/models/evermind/config.h"

namespace tinylm::evermind {

double init_normal(uint64_t key, uint32_t stream, uint64_t index);

// Fills params (laid out by param_layout(config)) with the initial weights for `seed`.
template <class T>
void init_params(const Config& config, uint64_t seed, std::span<T> params);

}  // namespace tinylm::evermind
