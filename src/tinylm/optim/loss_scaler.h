#pragma once
// Dynamic loss scaling for f16 training (the scheme of NVIDIA's AMP / torch.cuda.amp.GradScaler):
// the loss gradient is seeded with `scale`; after backward the caller unscales the gradients
// and asks `update` whether they were all finite. A non-finite step is skipped and the scale
// halves; after `growth_interval` consecutive finite steps the scale doubles.
#include <cmath>
#include <cstdint>
#include <span>

namespace tinylm::optim {

struct LossScalerConfig {
  double initial_scale = 65536.0;
  int64_t growth_interval = 2000;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerConfig config = {})
      : config_(config), scale_(config.initial_scale) {}

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }
  int64_t good_steps_in_a_row() const { return good_in_a_row_; }

  // Puts back the state saved with a run (scale(), good_steps_in_a_row(), skipped_steps()).
  void restore(double scale, int64_t good_in_a_row, int64_t skipped) {
    scale_ = scale;
    good_in_a_row_ = good_in_a_row;
    skipped_ = skipped;
  }

  // Multiplies every gradient by 1/scale and reports whether all of them are finite.
  bool unscale(std::span<float> grads) const {
    const float inv = static_cast<float>(1.0 / scale_);
    bool finite = true;
    for (float& g : grads) {
      g *= inv;
      finite &= std::isfinite(g);
    }
    return finite;
  }

  // Records the outcome of one optimizer step; returns true when the step may be applied.
  bool update(bool grads_finite) {
    if (!grads_finite) {
      scale_ *= config_.backoff_factor;
      good_in_a_row_ = 0;
      ++skipped_;
      return false;
    }
    if (++good_in_a_row_ >= config_.growth_interval) {
      scale_ *= config_.growth_factor;
      good_in_a_row_ = 0;
    }
    return true;
  }

 private:
  LossScalerConfig config_;
  double scale_;
  int64_t good_in_a_row_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace tinylm::optim
