#pragma once
// Global-norm gradient clipping over the flat gradient buffer, as torch.nn.utils.clip_grad_norm_:
// if ||g||_2 > max_norm, every gradient is multiplied by max_norm / (||g||_2 + 1e-6).
#include <cmath>
#include <span>

namespace tinylm::optim {

// Euclidean norm of grads, accumulated in double.
inline double global_norm(std::span<const float> grads) {
  double sum = 0.0;
  for (float g : grads) sum += static_cast<double>(g) * g;
  return std::sqrt(sum);
}

// Clips in place when max_norm > 0; returns the norm before clipping.
inline double clip_global_norm(std::span<float> grads, double max_norm) {
  const double norm = global_norm(grads);
  if (max_norm > 0.0 && norm > max_norm) {
    const float factor = static_cast<float>(max_norm / (norm + 1e-6));
    for (float& g : grads) g *= factor;
  }
  return norm;
}

}  // namespace tinylm::optim
