#pragma once
// Adam / AdamW over flat spans. The update is written term for term as microgpt.py writes
// it (pow for squares and square roots, bias corrections with pow(beta, t)), so a double
// run reproduces Python's floats exactly:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr * (m / (1 - b1^t)) / ((v / (1 - b2^t))^0.5 + eps)
// Weight decay, when non-zero, is decoupled (AdamW): p -= lr * wd * p before the update.
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/py_math.h"

namespace tinylm::optim {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

template <class T>
class Adam {
 public:
  Adam(size_t n, AdamConfig config) : config_(config), m_(n, T(0)), v_(n, T(0)) {}

  // One update at 1-based step t with learning rate lr (schedules live with the caller).
  // Zeroes grads afterwards, ready for the next accumulation.
  void step(std::span<T> params, std::span<T> grads, double lr, int64_t t) {
    check(params.size() == m_.size() && grads.size() == m_.size(),
          "[Adam::step] parameter/gradient size does not match the optimizer state");
    check(t >= 1, "[Adam::step] step count must start at 1");
    const double b1 = config_.beta1, b2 = config_.beta2;
    const double c1 = 1 - py_pow(b1, static_cast<double>(t));
    const double c2 = 1 - py_pow(b2, static_cast<double>(t));
    const double decay = lr * config_.weight_decay;
    for (size_t i = 0; i < params.size(); ++i) {
      const double g = grads[i];
      const double m = b1 * m_[i] + (1 - b1) * g;
      const double v = b2 * v_[i] + (1 - b2) * py_square(g);
      m_[i] = static_cast<T>(m);
      v_[i] = static_cast<T>(v);
      double p = params[i];
      if (decay != 0.0) p -= decay * p;
      const double m_hat = m / c1;
      const double v_hat = v / c2;
      params[i] = static_cast<T>(p - lr * m_hat / (py_sqrt(v_hat) + config_.eps));
      grads[i] = T(0);
    }
  }

  std::span<const T> first_moment() const { return m_; }
  std::span<const T> second_moment() const { return v_; }

 private:
  AdamConfig config_;
  std::vector<T> m_, v_;
};

}  // namespace tinylm::optim
