#include "tinylm/train/gpt2_train.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/optim/clip.h"
#include "tinylm/optim/sgd.h"

namespace tinylm::train {

namespace {
constexpr int64_t kChunk = 1 << 16;  // elements per parallel task over the flat buffers

// fn(begin, count) over [0, n) in chunks split across threads (memory-bound passes).
template <class Fn>
void chunked(size_t n, Fn&& fn) {
  const int64_t chunks = (static_cast<int64_t>(n) + kChunk - 1) / kChunk;
  parallel_for(0, chunks, 4, [&](int64_t c) {
    const size_t begin = static_cast<size_t>(c * kChunk);
    fn(begin, std::min<size_t>(static_cast<size_t>(kChunk), n - begin));
  });
}

// grads *= inv_scale; returns whether every gradient is finite.
bool unscale(std::span<float> grads, float inv_scale) {
  std::atomic<bool> all_finite{true};
  chunked(grads.size(), [&](size_t begin, size_t count) {
    bool finite = true;
    for (size_t i = begin; i < begin + count; ++i) {
      grads[i] *= inv_scale;
      finite &= std::isfinite(grads[i]);
    }
    if (!finite) all_finite.store(false, std::memory_order_relaxed);
  });
  return all_finite.load();
}
}  // namespace

Gpt2TrainState::Gpt2TrainState(const gpt2::Trainer& trainer, Gpt2TrainConfig c)
    : config(c), grads(trainer.num_params(), 0.0f), scaler(c.scaler) {
  check(c.lr >= 0 && std::isfinite(c.lr), "train_step: learning rate must be finite and >= 0, got ",
        c.lr);
  check(c.clip_norm >= 0, "train_step: clip_norm must be >= 0 (0 = off), got ", c.clip_norm);
  if (c.optimizer == Gpt2Optimizer::adamw) adam.emplace(grads.size(), c.adam);
}

Gpt2StepResult train_step(gpt2::Trainer& trainer, std::span<float> params, Gpt2TrainState& state,
                          std::span<const int32_t> inputs, std::span<const int32_t> targets) {
  check(params.size() == state.grads.size(), "train_step: ", params.size(),
        " parameters, the training state holds ", state.grads.size(), " gradients");
  const bool f16 = trainer.options().compute == DType::f16;
  Gpt2StepResult result;
  result.scale = f16 ? state.scaler.scale() : 1.0;
  const int64_t step = ++state.step;

  std::span<float> grads(state.grads);
  result.loss =
      trainer.forward(params, inputs, targets, {state.config.seed, static_cast<uint64_t>(step)});
  const bool loss_finite = std::isfinite(result.loss);
  if (!f16) {
    check(loss_finite, "train_step: loss is ", result.loss, " at step ", step,
          " (training diverged; parameters left as they were before this step)");
  }
  bool finite = loss_finite;
  if (finite) {
    // Overwrite mode: the gradients are written, not added, so they need no zeroing pass.
    trainer.backward(grads, static_cast<float>(result.scale), gpt2::GradMode::overwrite);
    if (f16) finite = unscale(grads, static_cast<float>(1.0 / result.scale));
  }
  if (f16) {
    result.applied = state.scaler.update(finite);
    if (!result.applied) return result;
  }
  if (state.config.clip_norm > 0)
    result.grad_norm = optim::clip_global_norm(grads, state.config.clip_norm);

  ++state.applied_steps;
  if (state.config.optimizer == Gpt2Optimizer::sgd) {
    const float lr = static_cast<float>(state.config.lr);
    chunked(params.size(), [&](size_t b, size_t n) {
      optim::sgd_step(params.subspan(b, n), std::span<const float>(grads).subspan(b, n), lr);
    });
  } else {
    state.adam->step(params, grads, state.config.lr, state.applied_steps);
  }
  return result;
}

}  // namespace tinylm::train
