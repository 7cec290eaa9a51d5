#pragma once
// The training loop's counters: with the parameters and the optimizer's moments, everything a
// resumed run needs. train_state.bin stores them (train_state.h).
#include <cstdint>
#include <optional>

namespace tinylm::train {

struct LoopState {
  int64_t step = 0;           // optimizer steps done (applied or skipped)
  int64_t applied_steps = 0;  // AdamW's t
  int64_t tokens_seen = 0;
  int64_t bad_steps_in_a_row = 0;
  std::optional<double> best_val_loss;
  int64_t best_val_step = 0;
  double loss_scale = 1.0;
  int64_t scaler_good_in_a_row = 0, scaler_skipped = 0;
  double elapsed_s = 0.0;  // training wall time so far, evaluation included
};

}  // namespace tinylm::train
