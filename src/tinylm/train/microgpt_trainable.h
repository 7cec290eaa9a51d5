#pragma once
// microgpt as a Trainable: one document (BOS, its characters, BOS) per step, float64
// parameters, the loss and gradient exactly as microgpt.py computes them.
#include <memory>

#include "tinylm/models/microgpt/model.h"
#include "tinylm/train/trainable.h"

namespace tinylm::train {

class MicrogptTrainable final : public Trainable<double> {
 public:
  explicit MicrogptTrainable(microgpt::Model& model) : model_(model) {}

  std::string_view arch() const override { return "microgpt"; }
  const ParamLayout& layout() const override { return model_.layout(); }
  std::span<double> params() override { return model_.params(); }
  std::span<double> grads() override { return model_.grads(); }
  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override;
  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override;

 private:
  microgpt::Model& model_;
};

}  // namespace tinylm::train
