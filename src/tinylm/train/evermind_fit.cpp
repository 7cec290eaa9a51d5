#include "tinylm/train/evermind_fit.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/py_random.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/optim/clip.h"

namespace tinylm::train {

namespace {

void check_options(const EvermindFitOptions& o) {
  check(o.epochs >= 0, "evermind fit: epochs must be >= 0 (got ", o.epochs, ")");
  check(o.accum_steps >= 1, "evermind fit: accum_steps must be >= 1 (got ", o.accum_steps, ")");
  check(o.lr >= 0.0 && std::isfinite(o.lr),
        "evermind fit: learning rate must be finite and >= 0 (got ", o.lr, ")");
  check(o.clip_norm >= 0.0, "evermind fit: clip norm must be >= 0 (got ", o.clip_norm, ")");
  check(o.aux_loss_coef >= 0.0 && std::isfinite(o.aux_loss_coef),
        "evermind fit: aux loss coefficient must be >= 0 (got ", o.aux_loss_coef, ")");
  check(o.loss_scaler.initial_scale > 0.0, "evermind fit: initial loss scale must be positive");
}

}  // namespace

EvermindTrainer::EvermindTrainer(evermind::Model<float>& model, const EvermindFitOptions& options)
    : model_(model),
      options_(options),
      adam_(model.params().size(), options.adam),
      scaler_(options.loss_scaler) {
  check_options(options);
  const int threads = static_cast<int>(std::clamp<int64_t>(
      options.threads > 0 ? options.threads : num_threads(), 1, options.accum_steps));
  for (int t = 0; t < threads; ++t) {
    workspaces_.emplace_back(model.config(), model.max_seq_len(), options.checkpoint_activations);
  }
  // Gradient buffers for a round of sequences: at least one per thread, up to 16 so that
  // rounds (and their synchronizations) are few.
  const int64_t round = std::min<int64_t>(options.accum_steps, std::max<int64_t>(threads, 16));
  for (int64_t j = 0; j < round; ++j) seq_grads_.emplace_back(model.params().size(), 0.0f);
  losses_.reserve(static_cast<size_t>(options.accum_steps));
}

EvermindTrainer::Window EvermindTrainer::accumulate(std::span<const std::span<const int>> window) {
  const int64_t n = static_cast<int64_t>(window.size());
  check(n >= 1, "evermind fit: empty accumulation window");
  // Everything a pass could reject is checked here, before the parallel region.
  for (const std::span<const int> s : window) {
    check(s.size() >= 2, "evermind fit: a training sequence needs at least 2 tokens (got ",
          s.size(), ")");
    check(static_cast<int64_t>(s.size()) <= model_.max_seq_len(),
          "evermind fit: a training sequence of ", s.size(),
          " tokens exceeds the model's max_seq_len ", model_.max_seq_len());
    for (const int tok : s) {
      check(tok >= 0 && tok < model_.config().vocab_size, "evermind fit: token ", tok,
            " outside the vocabulary [0, ", model_.config().vocab_size, ")");
    }
  }
  model_.pack();
  Window w;
  w.sequences = n;
  w.loss_scale = loss_scale();
  evermind::PassOptions pass;
  pass.aux_loss_coef = options_.aux_loss_coef;
  pass.checkpoint_activations = options_.checkpoint_activations;
  pass.loss_grad = w.loss_scale / static_cast<double>(n);
  std::span<float> acc = model_.grads();
  std::fill(acc.begin(), acc.end(), 0.0f);
  const int64_t P = static_cast<int64_t>(workspaces_.size());
  const int64_t R = static_cast<int64_t>(seq_grads_.size());
  const int64_t total = static_cast<int64_t>(acc.size());
  losses_.resize(static_cast<size_t>(n));
  // Rounds of up to R sequences: the threads take the round's sequences as they come, each
  // sequence into its own buffer (so which thread runs it does not matter); then the
  // buffers are added into the window's gradient in sequence order, in parallel over
  // elements, each addition clearing its buffer. Two synchronizations per round.
  for (int64_t first = 0; first < n; first += R) {
    const int64_t m = std::min(R, n - first);
    const int64_t threads = std::min(P, m);
#pragma omp parallel for num_threads(static_cast <int>(threads)) \
    schedule(dynamic, 1) if (threads > 1)
    for (int64_t j = 0; j < m; ++j) {
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      losses_[static_cast<size_t>(first + j)] =
          model_.forward_backward(workspaces_[t], window[static_cast<size_t>(first + j)],
                                  seq_grads_[static_cast<size_t>(j)], pass);
    }
    constexpr int64_t kChunk = 16384;
    const int64_t chunks = (total + kChunk - 1) / kChunk;
    // A fork costs a scheduler slice on a busy machine: only for a few million additions.
    const bool split = P > 1 && m * total >= (int64_t{1} << 21);
#pragma omp parallel for num_threads(static_cast <int>(P)) schedule(static) if (split)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t lo = c * kChunk, len = std::min(kChunk, total - lo);
      for (int64_t j = 0; j < m; ++j) {
        kernels::accumulate_and_clear(acc.data() + lo,
                                      seq_grads_[static_cast<size_t>(j)].data() + lo, len,
                                      options_.mixed_precision);
      }
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    const evermind::Loss& l = losses_[static_cast<size_t>(j)];
    w.loss += l.total;
    w.ce += l.ce;
    w.tokens += static_cast<int64_t>(window[static_cast<size_t>(j)].size());
  }
  w.loss /= static_cast<double>(n);
  w.ce /= static_cast<double>(n);
  if (options_.mixed_precision) {
    w.finite = scaler_.unscale(acc);
  } else {
    w.finite = std::all_of(acc.begin(), acc.end(), [](float g) { return std::isfinite(g); });
  }
  return w;
}

EvermindStep EvermindTrainer::apply(const Window& window) {
  EvermindStep s;
  s.step = ++steps_;
  s.loss = window.loss;
  s.ce = window.ce;
  s.sequences = window.sequences;
  s.tokens = window.tokens;
  s.loss_scale = window.loss_scale;
  std::span<float> grads = model_.grads();
  const bool apply = options_.mixed_precision ? scaler_.update(window.finite) : true;
  if (!apply) {
    s.skipped = true;
    std::fill(grads.begin(), grads.end(), 0.0f);
    return s;
  }
  check(window.finite, "evermind fit: non-finite gradient at step ", s.step,
        " (try a lower learning rate, clipping or mixed precision's loss scaling)");
  s.grad_norm = optim::clip_global_norm(grads, options_.clip_norm);
  adam_.step(model_.params(), grads, options_.lr, ++applied_);  // zeroes grads
  return s;
}

EvermindStep EvermindTrainer::step(std::span<const std::span<const int>> window) {
  return apply(accumulate(window));
}

EvermindFitResult fit(evermind::Model<float>& model, std::span<const std::vector<int>> sequences,
                      const EvermindFitOptions& options) {
  check_options(options);
  std::vector<std::span<const int>> usable;
  for (size_t i = 0; i < sequences.size(); ++i) {
    check(static_cast<int64_t>(sequences[i].size()) <= model.max_seq_len(),
          "evermind fit: sequence ", i, " has ", sequences[i].size(),
          " tokens, more than the model's max_seq_len ", model.max_seq_len());
    for (const int t : sequences[i]) {
      check(t >= 0 && t < model.config().vocab_size, "evermind fit: sequence ", i, " holds token ",
            t, " outside the vocabulary [0, ", model.config().vocab_size, ")");
    }
    if (sequences[i].size() >= 2) usable.emplace_back(sequences[i]);
  }
  EvermindFitResult result;
  result.loss_scale = options.mixed_precision ? options.loss_scaler.initial_scale : 1.0;
  if (usable.empty() || options.epochs == 0) return result;

  EvermindTrainer trainer(model, options);
  const int64_t n = static_cast<int64_t>(usable.size());
  const int64_t steps_per_epoch = (n + options.accum_steps - 1) / options.accum_steps;
  std::vector<size_t> order(usable.size());
  std::iota(order.begin(), order.end(), size_t{0});
  PyRandom rng(options.seed);
  std::vector<std::span<const int>> window;
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    if (options.shuffle) rng.shuffle(std::span<size_t>(order));
    double loss_sum = 0.0, ce_sum = 0.0;
    for (int64_t first = 0; first < n; first += options.accum_steps) {
      window.clear();
      for (int64_t i = first; i < std::min(n, first + options.accum_steps); ++i) {
        window.push_back(usable[order[static_cast<size_t>(i)]]);
      }
      EvermindStep s = trainer.step(window);
      s.epoch = epoch;
      s.total_steps = steps_per_epoch * options.epochs;
      loss_sum += s.loss * static_cast<double>(s.sequences);
      ce_sum += s.ce * static_cast<double>(s.sequences);
      result.tokens += s.tokens;
      if (options.on_step) options.on_step(s);
    }
    result.epoch_loss.push_back(loss_sum / static_cast<double>(n));
    result.epoch_ce.push_back(ce_sum / static_cast<double>(n));
  }
  result.steps = trainer.steps();
  result.skipped_steps = trainer.skipped_steps();
  result.loss_scale = trainer.loss_scale();
  return result;
}

}  // namespace tinylm::train
