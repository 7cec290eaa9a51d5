#pragma once
// Inverted dropout with counter-based masks: element e of a site is kept unless its uniform
// draw u < rate, with u = (w >> 8) / 2^24 and w word (g mod 4) of
//   Philox4x32-10(counter = {g / 4, site, step low, step high}, key = seed),
// g = first + e its index in the whole tensor (first: where this part starts, for a tensor
// split across shards). A mask is thus a pure function of (seed, step, site, element): the
// same for any thread count, visiting order, level or sharding. Kept elements are scaled by
// 1 / (1 - rate).
#include <cstdint>

namespace tinylm::kernels {

struct DropoutSite {
  uint64_t seed = 0;
  uint64_t step = 0;
  uint32_t site = 0;
  uint64_t first = 0;  // index of element 0 in the whole tensor
};

// For kernels that drop inside their own loops (kernels/activation/dropout_draw.h): throws
// unless rate is in [0, 1) and elements first .. first + n - 1 are in range; the draw's
// threshold, ceil(rate 2^24) (0 for rate 0, so 0 means no dropout), and the kept elements'
// scale 1 / (1 - rate).
void check_dropout(int64_t n, float rate, const DropoutSite& where);
uint32_t dropout_keep_threshold(float rate);
float dropout_keep_scale(float rate);

// mask[e] = 1 to keep, 0 to drop, for e in [0, n). rate in [0, 1); first + n <= 2^34.
void dropout_mask(uint8_t* mask, int64_t n, float rate, DropoutSite where);

// y = x * mask / (1 - rate), with the mask drawn as dropout_mask does (and stored for the
// backward). y may equal x.
void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, float rate,
                     DropoutSite where);
void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, float rate,
                     DropoutSite where);

// dx = dy * mask / (1 - rate). dx may equal dy.
void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, float rate);
void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n, float rate);

}  // namespace tinylm::kernels
