#include "tinylm/train/loop.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/optim/grad_ops.h"

namespace tinylm::train {

namespace {
constexpr EnumName<Optimizer> kOptimizerNames[] = {{Optimizer::adamw, "adamw"},
                                                   {Optimizer::sgd, "sgd"}};
constexpr EnumName<DecayScope> kDecayScopeNames[] = {{DecayScope::matrices, "matrices"},
                                                     {DecayScope::embeddings, "embeddings"},
                                                     {DecayScope::all, "all"}};
}  // namespace

Optimizer parse_optimizer(std::string_view name) {
  return parse_of(kOptimizerNames, name, "optimizer");
}
std::string_view optimizer_name(Optimizer o) { return name_of(kOptimizerNames, o); }

DecayScope parse_decay_scope(std::string_view name) {
  return parse_of(kDecayScopeNames, name, "weight-decay scope");
}
std::string_view decay_scope_name(DecayScope d) { return name_of(kDecayScopeNames, d); }

namespace {

bool decays(ParamRole role, DecayScope scope) {
  switch (scope) {
    case DecayScope::matrices:
      return role == ParamRole::matrix;
    case DecayScope::embeddings:
      return role == ParamRole::matrix || role == ParamRole::embedding;
    case DecayScope::all:
      return true;
  }
  return false;
}

// One flag per parameter scalar: whether weight decay applies to it.
std::vector<uint8_t> decay_mask(const ParamLayout& layout, DecayScope scope) {
  std::vector<uint8_t> mask(layout.size(), 0);
  for (const ParamEntry& e : layout.entries()) {
    std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(e.offset), e.numel,
                static_cast<uint8_t>(decays(e.role, scope)));
  }
  return mask;
}

}  // namespace

template <class T>
TrainLoop<T>::TrainLoop(Trainable<T>& model, StepData& data, LoopOptions options,
                        const distributed::Comm& comm)
    : model_(model), data_(data), comm_(comm), options_(options), scaler_(options.scaler) {
  check(options.steps >= 0, "--steps must be >= 0 (got ", options.steps, ")");
  check(options.lr.lr >= 0.0 && std::isfinite(options.lr.lr), "--lr must be finite and >= 0 (got ",
        options.lr.lr, ")");
  check(options.lr.min_lr >= 0.0 && options.lr.min_lr <= options.lr.lr,
        "--min-lr must be in [0, --lr] (got ", options.lr.min_lr, ")");
  check(options.lr.warmup >= 0, "--warmup must be >= 0 (got ", options.lr.warmup, ")");
  check(options.clip >= 0.0, "--clip must be >= 0 (got ", options.clip, ")");
  check(options.max_bad_steps >= 0, "--max-bad-steps must be >= 0");
  check(options.eval_every >= 0 && options.save_every >= 0,
        "--eval-every and --save-every must be >= 0");
  options_.lr.steps = options.steps;
  if (options.optimizer == Optimizer::adamw) {
    const optim::AdamConfig& a = options.adam;
    check(a.beta1 >= 0.0 && a.beta1 < 1.0 && a.beta2 >= 0.0 && a.beta2 < 1.0,
          "AdamW betas must be in [0, 1) (got ", a.beta1, ", ", a.beta2, ")");
    check(a.eps > 0.0 && a.weight_decay >= 0.0, "AdamW needs eps > 0 and weight decay >= 0");
    adam_.emplace(model.params().size(), a);
    if (a.weight_decay != 0.0) adam_->set_decay(decay_mask(model.layout(), options.decay));
  }
  // One process: a family on a GPU keeps its parameters, gradients and moments there.
  if constexpr (std::is_same_v<T, float>) {
    if (comm_.size() == 1) device_ = model.optimizer_on_device();
  }
  if (device_ && adam_) {
    device_->use_adam(options.adam, decay_mask(model.layout(), options.decay));
  }
  state_.loss_scale = options.loss_scaling ? scaler_.scale() : 1.0;
}

template <class T>
void TrainLoop<T>::restore(const LoopState& state, std::span<const T> m, std::span<const T> v) {
  state_ = state;
  scaler_.restore(state.loss_scale, state.scaler_good_in_a_row, state.scaler_skipped);
  if (adam_) {
    check(m.size() == adam_->first_moment().size() && v.size() == m.size(),
          "training state: ", m.size(), " moments for ", adam_->first_moment().size(),
          " parameters");
    std::copy(m.begin(), m.end(), adam_->first_moment().begin());
    std::copy(v.begin(), v.end(), adam_->second_moment().begin());
  }
  if constexpr (std::is_same_v<T, float>) {
    if (device_) device_->upload_state(first_moment(), second_moment());
  }
}

template <class T>
std::span<const T> TrainLoop<T>::first_moment() const {
  return adam_ ? adam_->first_moment() : std::span<const T>();
}

template <class T>
std::span<const T> TrainLoop<T>::second_moment() const {
  return adam_ ? adam_->second_moment() : std::span<const T>();
}

template <class T>
StepRecord TrainLoop<T>::step_once() {
  const int64_t s = state_.step;
  StepRecord r;
  r.step = s + 1;
  r.lr = options_.lr.at(s);
  r.loss_scale = options_.loss_scaling ? scaler_.scale() : 1.0;
  const Rows rows = data_.train_rows(s);
  const StepLoss l =
      model_.forward_backward(rows, data_.micro_rows(), r.loss_scale, options_.seed, s);
  r.loss = l.loss;
  r.objective = l.objective;
  r.step_tokens = l.tokens;
  // On the host without loss scaling, clipping's norm of float gradients is finite exactly
  // when every gradient is (a float's square cannot overflow the double sum): one pass over
  // them serves both.
  if (std::is_same_v<T, float> && !device_ && !options_.loss_scaling && options_.clip > 0.0)
    r.grad_norm = norm_on_host();
  const bool finite =
      device_       ? std::isfinite(l.objective) && device_->scale_and_check(1.0 / r.loss_scale)
      : r.grad_norm ? comm_.all_of(std::isfinite(l.objective)) && std::isfinite(*r.grad_norm)
                    : finite_on_host(l, r.loss_scale);
  const bool apply = options_.loss_scaling ? scaler_.update(finite) : finite;
  state_.step = s + 1;
  state_.tokens_seen += l.tokens;
  if (!apply) {
    r.skipped = true;
    r.grad_norm.reset();
    ++state_.bad_steps_in_a_row;
    check(state_.bad_steps_in_a_row <= options_.max_bad_steps, "step ", r.step, ": ",
          state_.bad_steps_in_a_row,
          " steps in a row had a non-finite loss or gradient (last loss ", l.loss,
          "); stopping (--max-bad-steps ", options_.max_bad_steps,
          "). Lower --lr or set --clip and start again");
  } else {
    state_.bad_steps_in_a_row = 0;
    ++state_.applied_steps;
    if (device_)
      update_on_device(r);
    else
      update_on_host(r);
  }
  state_.loss_scale = scaler_.scale();
  state_.scaler_good_in_a_row = scaler_.good_steps_in_a_row();
  state_.scaler_skipped = scaler_.skipped_steps();
  if (!options_.loss_scaling) state_.loss_scale = 1.0;
  return r;
}

// The gradient unscaled and checked, this process's part; every process takes part in the
// check, whatever its own part holds.
template <class T>
bool TrainLoop<T>::finite_on_host(const StepLoss& l, double loss_scale) {
  const size_t n = model_.grads().size();
  const distributed::Comm::Part part = comm_.my_part(n, optim::kGradChunk);
  std::span<T> grads = model_.grads().subspan(part.begin, part.end - part.begin);
  const bool mine_finite =
      std::isfinite(l.objective) && optim::scale_and_check(grads, 1.0 / loss_scale);
  return comm_.all_of(mine_finite);
}

// The gradient's global norm: the chunks' squared norms of every process's part, in chunk
// order.
template <class T>
double TrainLoop<T>::norm_on_host() {
  const size_t n = model_.grads().size();
  const distributed::Comm::Part part = comm_.my_part(n, optim::kGradChunk);
  std::vector<double> squares(optim::chunk_count(n));
  optim::chunk_square_norms(
      std::span<const T>(model_.grads().subspan(part.begin, part.end - part.begin)),
      squares.data() + part.begin / optim::kGradChunk);
  comm_.all_gather_parts(squares.data(), squares.size(), 1);
  return optim::norm_of_chunks(squares);
}

template <class T>
void TrainLoop<T>::update_on_host(StepRecord& r) {
  const size_t n = model_.grads().size();
  const distributed::Comm::Part part = comm_.my_part(n, optim::kGradChunk);
  std::span<T> grads = model_.grads().subspan(part.begin, part.end - part.begin);
  double clip = 1.0;  // the factor clipping scales the gradients by
  if (options_.clip > 0.0) {
    if (!r.grad_norm) r.grad_norm = norm_on_host();
    clip = optim::clip_factor(*r.grad_norm, options_.clip);
  }
  const std::span<T> params = model_.params();
  if (adam_) {  // Adam scales each gradient as it reads it, saving a pass
    adam_->step(params, model_.grads(), r.lr, state_.applied_steps, part.begin, part.end, clip);
  } else {
    if (clip != 1.0) optim::scale_and_check(grads, clip);
    optim::sgd_update(params.subspan(part.begin, grads.size()), std::span<const T>(grads), r.lr);
  }
  comm_.all_gather_parts(params.data(), n, optim::kGradChunk);
}

// The same on the device (one process): the device's arithmetic; nothing crosses to the host.
template <class T>
void TrainLoop<T>::update_on_device(StepRecord& r) {
  if (options_.clip > 0.0) {
    r.grad_norm = device_->grad_norm();
    if (*r.grad_norm > options_.clip)  // optim::clip_to's factor
      device_->scale_and_check(options_.clip / (*r.grad_norm + 1e-6));
  }
  if (adam_)
    device_->adam_step(r.lr, state_.applied_steps);
  else
    device_->sgd_step(r.lr);
}

template <class T>
void TrainLoop<T>::params_to_host() {
  if (device_) device_->download_params();
}

template <class T>
void TrainLoop<T>::share_moments() {
  if constexpr (std::is_same_v<T, float>) {
    if (device_) {  // the parameters and moments down to the host, for the checkpoint
      device_->download_state(adam_ ? adam_->first_moment() : std::span<float>(),
                              adam_ ? adam_->second_moment() : std::span<float>());
      return;
    }
  }
  if (!adam_) return;
  const size_t n = adam_->first_moment().size();
  comm_.all_gather_parts(adam_->first_moment().data(), n, optim::kGradChunk);
  comm_.all_gather_parts(adam_->second_moment().data(), n, optim::kGradChunk);
}

template <class T>
double TrainLoop<T>::evaluate() {
  const int64_t n = data_.eval_batches();
  check(n > 0, "evaluation needs validation batches (--val-fraction > 0 and --eval-batches > 0)");
  double sum = 0.0;
  for (int64_t k = 0; k < n; ++k)
    sum += model_.evaluate(data_.eval_rows(k), data_.micro_rows()).loss;
  return sum / static_cast<double>(n);
}

template <class T>
void TrainLoop<T>::evaluate_and_report(const LoopHooks& hooks) {
  EvalRecord e;
  e.step = state_.step;
  e.val_loss = evaluate();
  if (std::isfinite(e.val_loss) && (!state_.best_val_loss || e.val_loss < *state_.best_val_loss)) {
    state_.best_val_loss = e.val_loss;
    state_.best_val_step = state_.step;
  }
  e.best_val_loss = state_.best_val_loss.value_or(e.val_loss);
  if (hooks.on_eval) hooks.on_eval(e);
}

template <class T>
void TrainLoop<T>::run(const LoopHooks& hooks) {
  const bool validate = data_.eval_batches() > 0;
  const double elapsed0 = state_.elapsed_s;
  const Timer clock;
  if (validate && state_.step == 0) evaluate_and_report(hooks);
  while (state_.step < options_.steps) {
    const Timer step_clock;
    StepRecord r = step_once();
    r.step_s = step_clock.elapsed_ms() / 1e3;
    state_.elapsed_s = elapsed0 + clock.elapsed_ms() / 1e3;
    r.elapsed_s = state_.elapsed_s;
    r.tokens_seen = state_.tokens_seen;
    if (hooks.on_step) hooks.on_step(r);
    const int64_t s = state_.step;
    const bool last = s == options_.steps;
    if (validate && ((options_.eval_every > 0 && s % options_.eval_every == 0) || last)) {
      evaluate_and_report(hooks);
    }
    const bool stop = !last && hooks.should_stop && hooks.should_stop();
    state_.elapsed_s = elapsed0 + clock.elapsed_ms() / 1e3;
    if (hooks.on_checkpoint &&
        ((options_.save_every > 0 && s % options_.save_every == 0) || last || stop)) {
      share_moments();
      hooks.on_checkpoint(s);
    }
    if (stop) return;
  }
}

template class TrainLoop<float>;
template class TrainLoop<double>;

}  // namespace tinylm::train
