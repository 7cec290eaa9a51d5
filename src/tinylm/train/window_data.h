#pragma once
// Steps of B x T windows from a token file (GPT-2, EvermindLM): step s is `accum`
// micro-batches of B rows of T + 1 tokens placed by a WindowSampler; evaluation batch k is B
// fixed windows of the validation split.
#include <vector>

#include "tinylm/train/batches.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/token_file.h"

namespace tinylm::train {

class WindowData final : public StepData {
 public:
  // `tokens` must outlive this. eval_batches is 0 when the split holds no validation tokens.
  WindowData(const TokenFile& tokens, const WindowSampler& sampler, int64_t batch, int64_t accum,
             int64_t eval_batches);

  Rows train_rows(int64_t step) override;
  int64_t micro_rows() const override { return batch_; }
  int64_t eval_batches() const override { return eval_batches_; }
  Rows eval_rows(int64_t batch) override;

 private:
  const TokenFile& tokens_;
  WindowSampler sampler_;
  int64_t batch_, accum_, eval_batches_;
  std::vector<int32_t> buffer_;
};

}  // namespace tinylm::train
