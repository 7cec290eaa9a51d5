#pragma once
// microgpt as a Trainable: one document (BOS, its characters, BOS) per step, float64
// parameters, the loss and gradient exactly as microgpt.py computes them.
#include <memory>

#include "tinylm/models/microgpt/model.h"
#include "tinylm/train/trainable.h"

namespace tinylm::train {

class MicrogptTrainable final : public ModelTrainable<double, microgpt::Model> {
 public:
  explicit MicrogptTrainable(microgpt::Model& model) : ModelTrainable(model) {}

  std::string_view arch() const override { return "microgpt"; }
  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override;
  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override;
};

}  // namespace tinylm::train
