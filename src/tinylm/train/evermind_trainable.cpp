#include "tinylm/train/evermind_trainable.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cast/cast.h"

namespace tinylm::train {

namespace {

// The batch's loss (cross-entropy) and objective (with the aux loss), each a mean over rows.
StepLoss mean_loss(std::span<const evermind::Loss> rows) {
  StepLoss out;
  for (const evermind::Loss& l : rows) {
    out.loss += l.ce;
    out.objective += l.total;
    out.tokens += l.positions;
  }
  out.loss /= static_cast<double>(rows.size());
  out.objective /= static_cast<double>(rows.size());
  return out;
}

}  // namespace

EvermindTrainable::EvermindTrainable(evermind::Model<float>& model,
                                     const EvermindTrainOptions& options)
    : ModelTrainable(model), options_(options) {
  check(options.aux_loss_coef >= 0.0 && std::isfinite(options.aux_loss_coef),
        "evermind: aux loss coefficient must be finite and >= 0 (got ", options.aux_loss_coef, ")");
  check(options.max_rows >= 1, "evermind: rows per step must be >= 1");
  const int threads = static_cast<int>(std::clamp<int64_t>(
      options.threads > 0 ? options.threads : num_threads(), 1, options.max_rows));
  for (int t = 0; t < threads; ++t) {
    workspaces_.emplace_back(model.config(), model.max_seq_len(), options.checkpoint_activations);
  }
  // Buffers for a round of rows: at least one per thread, up to 16 so that rounds (and their
  // synchronizations) are few.
  const int64_t round = std::min<int64_t>(options.max_rows, std::max<int64_t>(threads, 16));
  for (int64_t j = 0; j < round; ++j) row_grads_.emplace_back(model.params().size(), 0.0f);
}

void EvermindTrainable::check_rows(const Rows& rows) const {
  check(rows.count >= 1 && rows.width >= 2 && rows.width <= model_.max_seq_len(),
        "evermind: rows of 2 ..", model_.max_seq_len(), " tokens expected, got ", rows.count,
        " of ", rows.width);
  const int vocab = static_cast<int>(model_.config().vocab_size);
  for (const int32_t t : rows.tokens) {
    check(t >= 0 && t < vocab, "evermind: token ", t, " outside the vocabulary [0, ", vocab, ")");
  }
}

StepLoss EvermindTrainable::forward_backward(const Rows& rows, int64_t, double grad_scale, uint64_t,
                                             int64_t) {
  check_rows(rows);  // everything a pass could reject, before the parallel region
  check(rows.count <= options_.max_rows, "evermind: ", rows.count, " rows in a step, planned for ",
        options_.max_rows);
  model_.pack();
  const int64_t n = rows.count;
  evermind::PassOptions pass;
  pass.aux_loss_coef = options_.aux_loss_coef;
  pass.checkpoint_activations = options_.checkpoint_activations;
  pass.loss_grad = grad_scale / static_cast<double>(n);
  std::span<float> acc = model_.grads();
  std::fill(acc.begin(), acc.end(), 0.0f);
  const int64_t P = static_cast<int64_t>(workspaces_.size());
  const int64_t R = static_cast<int64_t>(row_grads_.size());
  const int64_t total = static_cast<int64_t>(acc.size());
  losses_.resize(static_cast<size_t>(n));
  // Rounds of up to R rows: the threads take the round's rows as they come, each row into its
  // own buffer (so which thread runs it does not matter); then the buffers are added into
  // the gradient in row order, in parallel over elements, each addition clearing its buffer.
  for (int64_t first = 0; first < n; first += R) {
    const int64_t m = std::min(R, n - first);
    const int64_t threads = std::min(P, m);
#pragma omp parallel for num_threads(static_cast <int>(threads)) \
    schedule(dynamic, 1) if (threads > 1)
    for (int64_t j = 0; j < m; ++j) {
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      losses_[static_cast<size_t>(first + j)] = model_.forward_backward(
          workspaces_[t], rows.row(first + j), row_grads_[static_cast<size_t>(j)], pass);
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
                                      row_grads_[static_cast<size_t>(j)].data() + lo, len,
                                      options_.fp16_grads);
      }
    }
  }
  return mean_loss(losses_);
}

StepLoss EvermindTrainable::evaluate(const Rows& rows, int64_t) {
  check_rows(rows);
  model_.pack();
  const int64_t n = rows.count;
  losses_.resize(static_cast<size_t>(n));
  const int64_t threads = std::min<int64_t>(static_cast<int64_t>(workspaces_.size()), n);
#pragma omp parallel for num_threads(static_cast <int>(threads)) \
    schedule(dynamic, 1) if (threads > 1)
  for (int64_t j = 0; j < n; ++j) {
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    losses_[static_cast<size_t>(j)] =
        model_.loss(workspaces_[t], rows.row(j), options_.aux_loss_coef);
  }
  return mean_loss(losses_);
}

// Multiply-adds per token: the tied output layer (V x D), and per layer the conv taps, the
// router, the shared expert and top_k routed experts (two D x H matrices each); times 2 for
// FLOPs and 3 for forward + backward.
double EvermindTrainable::flops_per_token() const {
  const evermind::Config& c = model_.config();
  const double per_layer = static_cast<double>(c.d_model) * c.conv_kernel +
                           static_cast<double>(c.n_experts) * c.d_model +
                           (1.0 + static_cast<double>(c.top_k)) * 2.0 * c.d_model * c.hidden_dim;
  return 6.0 * (static_cast<double>(c.vocab_size) * c.d_model + c.n_layers * per_layer);
}

std::vector<std::unique_ptr<Trainable<float>>> evermind_replicas(
    evermind::Model<float>& model, const EvermindTrainOptions& options, int64_t devices,
    std::vector<std::unique_ptr<evermind::Model<float>>>& copies) {
  check(devices >= 1, "evermind: at least one device is needed");
  std::vector<std::unique_ptr<Trainable<float>>> replicas;
  replicas.push_back(std::make_unique<EvermindTrainable>(model, options));
  for (int64_t s = 1; s < devices; ++s) {
    copies.push_back(std::make_unique<evermind::Model<float>>(model.config(), model.max_seq_len(),
                                                              model.params()));
    replicas.push_back(std::make_unique<EvermindTrainable>(*copies.back(), options));
  }
  return replicas;
}

}  // namespace tinylm::train
