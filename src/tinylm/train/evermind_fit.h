#pragma once
// Training EvermindLM on a list of token sequences: AdamW, gradient accumulation, optional
// global-norm clipping, activation checkpointing and fp16 mixed precision with dynamic loss
// scaling (docs/evermind.md).
//
// One optimizer step takes a window of accum_steps sequences (the last window of an epoch
// may be shorter) and averages their gradients: each sequence's backward is seeded with
// 1/n (times the loss scale under mixed precision) into its own buffer, and the buffers
// are added into the model's gradient in sequence order. The sequences of a window run in
// parallel on up to `threads` threads, in rounds of up to max(16, threads) sequences;
// because every sequence has its own buffer and the sum keeps sequence order, the result is
// the same bytes for any thread count. (The threads live here rather than inside the kernels: the
// matrices are too small to split, whole sequences are not.)
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tinylm/models/evermind/model.h"
#include "tinylm/optim/adam.h"
#include "tinylm/optim/loss_scaler.h"

namespace tinylm::train {

struct EvermindStep {
  int64_t step = 0;         // optimizer steps so far, skipped ones included (1-based)
  int64_t total_steps = 0;  // steps the whole fit() will take (for an ETA)
  int64_t epoch = 0;        // 0-based
  double loss = 0.0;        // mean total loss (ce + aux term) of the window's sequences
  double ce = 0.0;          // mean cross-entropy of the window's sequences
  int64_t sequences = 0;    // in this window
  int64_t tokens = 0;       // tokens in this window (sum of the sequence lengths)
  double grad_norm = 0.0;   // global norm of the averaged gradient before clipping (0 when skipped)
  bool skipped = false;     // mixed precision: gradients overflowed, no update
  double loss_scale = 1.0;  // the scale this step used (1 without mixed precision)
};

struct EvermindFitOptions {
  int64_t epochs = 1;
  int64_t accum_steps = 1;  // sequences per optimizer step
  double lr = 1e-3;
  optim::AdamConfig adam{0.9, 0.999, 1e-8, 0.01};  // AdamW: decoupled weight decay 0.01
  double clip_norm = 0.0;                          // > 0: clip the global gradient norm to this
  double aux_loss_coef = 0.01;
  bool checkpoint_activations = false;
  bool mixed_precision = false;  // fp16 gradients with dynamic loss scaling
  optim::LossScalerConfig loss_scaler =
      {};               // initial 65536, ×2 after 2000 clean steps, ×½ on overflow
  bool shuffle = true;  // reshuffle the sequence order every epoch
  uint64_t seed = 0;    // of the shuffle
  int threads = 0;      // 0: tinylm::num_threads()
  std::function<void(const EvermindStep&)> on_step;  // after every optimizer step
};

struct EvermindFitResult {
  std::vector<double> epoch_loss;  // mean total loss over each epoch's sequences
  std::vector<double> epoch_ce;    // mean cross-entropy over each epoch's sequences
  int64_t steps = 0;               // optimizer steps, skipped ones included
  int64_t skipped_steps = 0;
  double loss_scale = 1.0;  // final scale (1 without mixed precision)
  int64_t tokens = 0;       // tokens trained on
};

// The optimizer, scaler and per-thread buffers across steps; fit() drives one. Use it
// directly to interleave training with other work (sampling, checkpoints).
class EvermindTrainer {
 public:
  EvermindTrainer(evermind::Model<float>& model, const EvermindFitOptions& options);

  struct Window {
    double loss = 0.0, ce = 0.0;  // means over the window
    int64_t sequences = 0, tokens = 0;
    bool finite = true;  // the averaged gradient has no inf/NaN
    double loss_scale = 1.0;
  };
  // Sets model.grads() to the window's averaged (unscaled) gradient. Sequences must hold
  // 2 .. model.max_seq_len() tokens. Re-packs the model's weights first.
  Window accumulate(std::span<const std::span<const int>> window);
  // Finishes a step on the accumulated gradient: on overflow skips it (the scale halves),
  // else clips and applies AdamW. Leaves model.grads() zeroed.
  EvermindStep apply(const Window& window);
  // accumulate + apply.
  EvermindStep step(std::span<const std::span<const int>> window);

  int64_t steps() const { return steps_; }
  int64_t skipped_steps() const { return scaler_.skipped_steps(); }
  double loss_scale() const { return options_.mixed_precision ? scaler_.scale() : 1.0; }
  int threads() const { return static_cast<int>(workspaces_.size()); }

 private:
  evermind::Model<float>& model_;
  EvermindFitOptions options_;
  optim::Adam<float> adam_;
  optim::LossScaler scaler_;
  std::vector<evermind::Workspace<float>> workspaces_;  // one per thread
  std::vector<std::vector<float>> seq_grads_;  // one per sequence of a round, zero between uses
  std::vector<evermind::Loss> losses_;         // one per sequence of the window
  int64_t steps_ = 0, applied_ = 0;
};

// Trains for options.epochs over `sequences` (each of at most model.max_seq_len() tokens;
// those under 2 tokens are left out). Deterministic for a given model seed and options,
// whatever the thread count.
EvermindFitResult fit(evermind::Model<float>& model, std::span<const std::vector<int>> sequences,
                      const EvermindFitOptions& options);

}  // namespace tinylm::train
