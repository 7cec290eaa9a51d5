#pragma once
// The index std::max_element gives: the first of the largest values, NaN never chosen unless it
// is x[0] (then 0, as max_element compares everything against it and finds nothing larger).
// Greedy decoding takes it of every row of logits, so over a server's batch the scalar loop
// was a visible part of each step.
//
// Contract: exact (the same index as std::max_element, which the tests compare against at every
// level). n >= 1.
#include <cstdint>

namespace tinylm::kernels {

int64_t argmax(const float* x, int64_t n);

}  // namespace tinylm::kernels
