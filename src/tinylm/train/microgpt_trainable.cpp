#include "tinylm/train/microgpt_trainable.h"

#include <algorithm>

#include "tinylm/core/error.h"

namespace tinylm::train {

namespace {
int64_t positions(const microgpt::Model& model, std::span<const int32_t> row) {
  return std::min<int64_t>(model.config().block_size, static_cast<int64_t>(row.size()) - 1);
}
}  // namespace

StepLoss MicrogptTrainable::forward_backward(const Rows& rows, int64_t, double grad_scale, uint64_t,
                                             int64_t) {
  // microgpt.py's step: the gradient of one document's mean loss, nothing scaled.
  check(rows.count == 1 && grad_scale == 1.0,
        "microgpt: a step trains one document, without loss scaling");
  model_.zero_grads();
  StepLoss out;
  out.loss = out.objective = model_.loss_and_grad(rows.row(0));
  out.tokens = positions(model_, rows.row(0));
  return out;
}

StepLoss MicrogptTrainable::evaluate(const Rows& rows, int64_t) {
  StepLoss out;
  for (int64_t r = 0; r < rows.count; ++r) {
    out.loss += model_.loss(rows.row(r));
    out.tokens += positions(model_, rows.row(r));
  }
  out.loss /= static_cast<double>(std::max<int64_t>(1, rows.count));
  out.objective = out.loss;
  return out;
}

}  // namespace tinylm::train
