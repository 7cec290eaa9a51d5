#pragma once
// Plain SGD over flat spans: w -= lr * g (no momentum, no weight decay), as the GPT-2
// reference protocol prescribes.
#include <span>

#include "tinylm/core/error.h"

namespace tinylm::optim {

inline void sgd_step(std::span<float> params, std::span<const float> grads, float lr) {
  check(params.size() == grads.size(), "[sgd_step] parameter/gradient size mismatch");
  for (size_t i = 0; i < params.size(); ++i) params[i] -= lr * grads[i];
}

}  // namespace tinylm::optim
