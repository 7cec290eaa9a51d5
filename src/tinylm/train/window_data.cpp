#include "tinylm/train/window_data.h"

namespace tinylm::train {

WindowData::WindowData(const TokenFile& tokens, const WindowSampler& sampler, int64_t batch,
                       int64_t accum, int64_t eval_batches)
    : tokens_(tokens),
      sampler_(sampler),
      batch_(batch),
      accum_(accum),
      eval_batches_(sampler.split().n_val > 0 ? eval_batches : 0) {}

Rows WindowData::train_rows(int64_t step) {
  const int64_t width = sampler_.row_tokens(), rows = accum_ * batch_;
  buffer_.resize(static_cast<size_t>(rows * width));
  sampler_.fill_step(tokens_, step, buffer_);
  return {buffer_, rows, width};
}

Rows WindowData::eval_rows(int64_t batch) {
  const int64_t width = sampler_.row_tokens();
  buffer_.resize(static_cast<size_t>(batch_ * width));
  sampler_.fill_eval_batch(tokens_, batch, buffer_);
  return {buffer_, batch_, width};
}

}  // namespace tinylm::train
