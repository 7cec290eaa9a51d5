#pragma once
// EvermindLM as a Trainable. A step's rows run in parallel on up to `threads` threads, in
// rounds of up to max(16, threads) rows; each row's backward is seeded with grad_scale / rows
// into its own buffer, and the buffers are added into the gradient in row order, so the
// result is the same bytes for any thread count. (The threads live here rather than inside
// the kernels: the matrices are too small to split, whole rows are not.) With fp16
// gradients (mixed precision), every per-row gradient and every partial sum is rounded to
// f16, as a GPU's f16 gradient buffers would hold them (docs/evermind.md).
#include <memory>
#include <vector>

#include "tinylm/models/evermind/model.h"
#include "tinylm/train/trainable.h"

namespace tinylm::train {

struct EvermindTrainOptions {
  double aux_loss_coef = 0.01;
  bool checkpoint_activations = false;
  bool fp16_grads = false;
  int threads = 0;       // 0: tinylm::num_threads()
  int64_t max_rows = 1;  // rows per step at most (sizes the per-row gradient buffers)
};

class EvermindTrainable final : public ModelTrainable<float, evermind::Model<float>> {
 public:
  // The model's max_seq_len bounds the row width.
  EvermindTrainable(evermind::Model<float>& model, const EvermindTrainOptions& options);

  std::string_view arch() const override { return "evermind"; }
  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override;
  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override;
  double flops_per_token() const override;

  int threads() const { return static_cast<int>(workspaces_.size()); }

 private:
  void check_rows(const Rows& rows) const;

  EvermindTrainOptions options_;
  std::vector<evermind::Workspace<float>> workspaces_;  // one per thread
  std::vector<std::vector<float>> row_grads_;           // one per row of a round, zero between uses
  std::vector<evermind::Loss> losses_;                  // one per row of the step
};

// `devices` EvermindLM replicas for train/replicas.h: the first trains `model` itself, the
// others copies of it, which are added to `copies` (they must outlive the replicas).
std::vector<std::unique_ptr<Trainable<float>>> evermind_replicas(
    evermind::Model<float>& model, const EvermindTrainOptions& options, int64_t devices,
    std::vector<std::unique_ptr<evermind::Model<float>>>& copies);

}  // namespace tinylm::train
