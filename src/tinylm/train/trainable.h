#pragma once
// What the training loop needs of a model family: its named parameters in one flat buffer, a
// gradient buffer of the same layout, and forward + backward over a step's token rows. Each
// family adapts its own model (train/gpt2_trainable.h, evermind_trainable.h,
// microgpt_trainable.h); the loop (train/loop.h) does the rest the same way for all.
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <utility>

#include "tinylm/core/param_store.h"
#include "tinylm/optim/adam.h"

namespace tinylm::train {

// Token rows, each predicting its tokens 1.. from the ones before: `count` rows of `width`
// tokens, row-major. GPT-2 and EvermindLM take windows of T + 1 tokens; microgpt one
// document (BOS, characters, BOS) per step.
struct Rows {
  std::span<const int32_t> tokens;
  int64_t count = 0, width = 0;
  // Where these rows sit in each micro-batch of the whole batch when it is split into shards
  // (train/replicas.h): anything random per row (dropout) is keyed by the row's index there.
  int64_t first_row = 0;

  std::span<const int32_t> row(int64_t r) const {
    return tokens.subspan(static_cast<size_t>(r * width), static_cast<size_t>(width));
  }
};

struct StepLoss {
  double loss = 0.0;       // mean next-token cross-entropy: what is reported and compared
  double objective = 0.0;  // what the gradient is of (EvermindLM adds its load-balancing term)
  int64_t tokens = 0;      // predicted positions
};

// fn(begin, end): grads()[begin, end) holds its final values for this step.
using GradDone = std::function<void(size_t begin, size_t end)>;

// The optimizer's arithmetic where a family keeps its parameters and gradients on a device (a
// GPU): the loop calls these instead of its host passes (optim/grad_ops.h, optim/adam.h), with
// their meanings, so the parameters and gradients stay on the device from step to step.
class DeviceOptimizer {
 public:
  virtual ~DeviceOptimizer() = default;
  // grads *= factor (not when it is 1); whether every gradient is finite.
  virtual bool scale_and_check(double factor) = 0;
  virtual double grad_norm() = 0;  // sqrt(sum of squared gradients)
  // AdamW from now on: its settings, and whether each parameter scalar decays (host layout).
  virtual void use_adam(const optim::AdamConfig& config, std::span<const uint8_t> decay) = 0;
  virtual void adam_step(double lr, int64_t t) = 0;  // t: 1-based; the gradients zeroed
  virtual void sgd_step(double lr) = 0;
  // The parameters into the family's params().
  virtual void download_params() = 0;
  // The parameters (into params()) and Adam's moments (empty spans without Adam), in the host
  // layout, for a checkpoint; and up from there after a restore.
  virtual void download_state(std::span<float> m, std::span<float> v) = 0;
  virtual void upload_state(std::span<const float> m, std::span<const float> v) = 0;
};

template <class T>
class Trainable {
 public:
  virtual ~Trainable() = default;

  virtual std::string_view arch() const = 0;
  virtual const ParamLayout& layout() const = 0;
  virtual std::span<T> params() = 0;
  virtual std::span<T> grads() = 0;

  // Sets grads() to grad_scale times the gradient of the mean, over the micro-batches of
  // micro_rows rows each, of the micro-batch objective. `seed` and `step` key anything
  // random in the pass (dropout masks).
  virtual StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale,
                                    uint64_t seed, int64_t step) = 0;
  // The mean loss over the micro-batches, without dropout or gradients.
  virtual StepLoss evaluate(const Rows& rows, int64_t micro_rows) = 0;

  // Forward + backward floating-point operations per trained token; 0 when not modelled.
  virtual double flops_per_token() const { return 0.0; }

  // The loop runs the optimizer on the family's device from now on (null where the family has
  // none, or cannot): forward_backward then leaves the gradient there (grads() is not filled),
  // and params() is current only after DeviceOptimizer::download_state.
  virtual DeviceOptimizer* optimizer_on_device() { return nullptr; }

  // Set: forward_backward reports parts of the gradient as its last micro-batch's backward
  // completes them, so that a data-parallel exchange can start early (distributed/grad_exchange.h).
  // A family that cannot report ignores it; its gradient is complete when forward_backward
  // returns.
  void report_grads(GradDone done) { grad_done_ = std::move(done); }

 protected:
  GradDone grad_done_;
};

// A Trainable over a model that holds its own parameters and gradients (its layout(), params()
// and grads()): EvermindLM's and microgpt's. (GPT-2's trainer keeps them in buffers of its own.)
template <class T, class Model>
class ModelTrainable : public Trainable<T> {
 public:
  const ParamLayout& layout() const override { return model_.layout(); }
  std::span<T> params() override { return model_.params(); }
  std::span<T> grads() override { return model_.grads(); }

 protected:
  explicit ModelTrainable(Model& model) : model_(model) {}

  Model& model_;
};

}  // namespace tinylm::train
