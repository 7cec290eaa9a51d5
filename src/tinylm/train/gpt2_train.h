#pragma once
// One GPT-2 training step over a fixed batch, the library entry point that `tinylm
// train-gpt2` and any other training loop build on:
//   forward + backward writing the gradients (seeded with the loss scale in f16) ->
//   f16: unscale, skip the step when a gradient is not finite (the scale halves) ->
//   optional global-norm clipping -> SGD (w -= lr g) or AdamW (decoupled weight decay).
// Parameters, gradients and optimizer state are f32 whatever the compute type.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tinylm/models/gpt2/trainer.h"
#include "tinylm/optim/adam.h"
#include "tinylm/optim/loss_scaler.h"

namespace tinylm::train {

enum class Gpt2Optimizer : uint8_t { sgd, adamw };

struct Gpt2TrainConfig {
  Gpt2Optimizer optimizer = Gpt2Optimizer::sgd;
  double lr = 1e-4;
  optim::AdamConfig adam{};  // adamw only; weight_decay is applied decoupled (AdamW)
  double clip_norm = 0.0;    // > 0: scale the gradients so their global L2 norm is <= clip_norm
  uint64_t seed = 0;         // dropout masks: keyed by (seed, step, site, element)
  optim::LossScalerConfig scaler{};  // compute f16 only (initial scale 65536, growth every 2000)
};

// Everything that persists between steps besides the parameters.
struct Gpt2TrainState {
  Gpt2TrainState(const gpt2::Trainer& trainer, Gpt2TrainConfig config);

  Gpt2TrainConfig config;
  std::vector<float>
      grads;  // param_layout order: the last backward's (unscaled, clipped) gradients
  std::optional<optim::Adam<float>> adam;  // adamw only
  optim::LossScaler scaler;
  int64_t step = 0;           // steps run (applied or skipped); the next one is step + 1
  int64_t applied_steps = 0;  // optimizer updates made (AdamW's t)
};

struct Gpt2StepResult {
  float loss = 0;         // mean cross-entropy of the batch before this step's update
  bool applied = true;    // false: f16 gradients overflowed, parameters left unchanged
  double scale = 1.0;     // the loss scale this step used (1 unless compute is f16)
  double grad_norm = -1;  // global norm of the unscaled gradients before clipping; -1 when
                          // clipping is off (computing it costs a pass over all gradients)
};

// Runs step state.step + 1 on (inputs, targets) (trainer's batch_size x seq_len ids each),
// updating params in place. A NaN or infinite loss in f32 or bf16 throws Error before any
// update; in f16 it counts as an overflow (the step is skipped and the scale halves).
Gpt2StepResult train_step(gpt2::Trainer& trainer, std::span<float> params, Gpt2TrainState& state,
                          std::span<const int32_t> inputs, std::span<const int32_t> targets);

}  // namespace tinylm::train
