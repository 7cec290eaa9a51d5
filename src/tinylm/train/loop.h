#pragma once
// The training loop every family shares. One optimizer step:
//   rows from StepData -> forward + backward into the flat gradient (seeded with the loss
//   scale under f16) -> unscale and check every gradient is finite -> a non-finite step is
//   skipped (the loss scale halves) -> global-norm clipping -> AdamW (decay on the chosen
//   parameter kinds) or SGD at the schedule's learning rate.
// Evaluation every eval_every steps over fixed validation batches, tracking the best value;
// checkpoints through a hook every save_every steps and at the end. Under MPI each process
// unscales, clips and updates its part of the parameters (distributed::Comm::my_part: the part
// whose gradient Replicas reduced for it), with the norm and the finite check taken over all the
// parts, and the parts are then shared. Everything that decides
// the next step is in LoopState and the optimizer's moments, so a run restored from them
// continues bit for bit as if it had never stopped.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "tinylm/distributed/comm.h"
#include "tinylm/optim/adam.h"
#include "tinylm/optim/loss_scaler.h"
#include "tinylm/optim/schedule.h"
#include "tinylm/train/loop_state.h"
#include "tinylm/train/trainable.h"

namespace tinylm::train {

enum class Optimizer : uint8_t { adamw, sgd };
Optimizer parse_optimizer(std::string_view name);  // "adamw" | "sgd"
std::string_view optimizer_name(Optimizer o);

// Which parameters AdamW's weight decay applies to: the weights of linear maps (default),
// those and the embeddings, or every parameter.
enum class DecayScope : uint8_t { matrices, embeddings, all };
DecayScope parse_decay_scope(std::string_view name);  // "matrices" | "embeddings" | "all"
std::string_view decay_scope_name(DecayScope d);

struct LoopOptions {
  int64_t steps = 0;
  optim::LrSchedule lr;  // lr.steps is set to steps
  Optimizer optimizer = Optimizer::adamw;
  optim::AdamConfig adam{0.9, 0.95, 1e-8, 0.1};
  DecayScope decay = DecayScope::matrices;
  double clip = 0.0;          // > 0: clip the global gradient norm to this
  bool loss_scaling = false;  // f16 compute: dynamic loss scaling
  optim::LossScalerConfig scaler{};
  int64_t eval_every = 0;      // 0: evaluate at the end only
  int64_t save_every = 0;      // 0: checkpoint at the end only
  int64_t max_bad_steps = 10;  // non-finite steps in a row before the run stops
  uint64_t seed = 0;           // keys dropout masks
};

// Where a step's rows come from.
class StepData {
 public:
  virtual ~StepData() = default;
  virtual Rows train_rows(int64_t step) = 0;  // 0-based step; valid until the next call
  virtual int64_t micro_rows() const = 0;     // rows per micro-batch
  virtual int64_t eval_batches() const = 0;   // 0: no validation
  virtual Rows eval_rows(int64_t batch) = 0;  // the same rows every time
};

struct StepRecord {
  int64_t step = 0;  // 1-based: steps done
  double loss = 0.0, objective = 0.0, lr = 0.0;
  std::optional<double> grad_norm;  // before clipping; computed when clipping is on
  int64_t step_tokens = 0, tokens_seen = 0;
  bool skipped = false;
  double loss_scale = 1.0;
  double step_s = 0.0, elapsed_s = 0.0;
};

struct EvalRecord {
  int64_t step = 0;
  double val_loss = 0.0, best_val_loss = 0.0;
};

struct LoopHooks {
  std::function<void(const StepRecord&)> on_step;
  std::function<void(const EvalRecord&)> on_eval;
  std::function<void(int64_t step)> on_checkpoint;  // save the model and the state now
  std::function<bool()> should_stop;  // checked after each step; true: checkpoint and return
};

template <class T>
class TrainLoop {
 public:
  TrainLoop(Trainable<T>& model, StepData& data, LoopOptions options,
            const distributed::Comm& comm = distributed::Comm::world());

  // Continues a saved run: its state and moments (empty moments for SGD).
  void restore(const LoopState& state, std::span<const T> m, std::span<const T> v);
  const LoopState& state() const { return state_; }
  // The moments: under MPI each process keeps its part up to date, and they are made whole
  // on every process for on_checkpoint.
  std::span<const T> first_moment() const;
  std::span<const T> second_moment() const;

  // Trains from state().step to options.steps (a fresh run evaluates once first). Throws
  // Error when max_bad_steps steps in a row are not finite.
  void run(const LoopHooks& hooks);
  // Mean loss over the validation batches.
  double evaluate();
  // The model's params() made current (they are on the device while the optimizer runs there).
  void params_to_host();

 private:
  StepRecord step_once();
  // step_once's checks, clipping and update: on the host (each process its part) or the device.
  bool finite_on_host(const StepLoss& l, double loss_scale);
  double norm_on_host();
  void update_on_host(StepRecord& r);
  void update_on_device(StepRecord& r);
  void share_moments();
  void evaluate_and_report(const LoopHooks& hooks);

  Trainable<T>& model_;
  StepData& data_;
  const distributed::Comm& comm_;
  LoopOptions options_;
  std::optional<optim::Adam<T>> adam_;  // on the device: only its moments, as the host holds them
  DeviceOptimizer* device_ = nullptr;   // the family's, when the optimizer runs there
  optim::LossScaler scaler_;
  LoopState state_;
};

extern template class TrainLoop<float>;
extern template class TrainLoop<double>;

}  // namespace tinylm::train
