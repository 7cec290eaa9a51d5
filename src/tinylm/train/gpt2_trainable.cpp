#include "tinylm/train/gpt2_trainable.h"

#include "tinylm/core/error.h"

namespace tinylm::train {

Gpt2Trainable::Gpt2Trainable(const gpt2::Config& config, std::vector<float> params,
                             gpt2::TrainerOptions options)
    : trainer_(config, options), params_(std::move(params)) {
  check(params_.size() == trainer_.num_params(), "gpt2: ", params_.size(),
        " parameters given, the model has ", trainer_.num_params());
  grads_.assign(params_.size(), 0.0f);
  const size_t n = static_cast<size_t>(options.batch_size) * static_cast<size_t>(options.seq_len);
  inputs_.resize(n);
  targets_.resize(n);
}

int64_t gpt2_micro_batch(const Rows& rows, int64_t a, int64_t micro_rows,
                         const gpt2::TrainerOptions& options, std::span<int32_t> inputs,
                         std::span<int32_t> targets) {
  const int64_t B = options.batch_size, T = options.seq_len;
  check(micro_rows == B && rows.width == T + 1 && rows.count % B == 0,
        "gpt2: the trainer takes micro-batches of ", B, " rows of ", T + 1, " tokens");
  for (int64_t r = 0; r < B; ++r) {
    const std::span<const int32_t> row = rows.row(a * B + r);
    std::copy(row.begin(), row.end() - 1, inputs.begin() + r * T);
    std::copy(row.begin() + 1, row.end(), targets.begin() + r * T);
  }
  return B * T;
}

StepLoss Gpt2Trainable::forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale,
                                         uint64_t seed, int64_t step) {
  const int64_t n = rows.count / micro_rows;
  StepLoss out;
  for (int64_t a = 0; a < n; ++a) {
    out.tokens += gpt2_micro_batch(rows, a, micro_rows, trainer_.options(), inputs_, targets_);
    // Dropout masks keyed per micro-batch: with one micro-batch per step, by the step's
    // 1-based number, as train-gpt2's protocol keys them.
    const gpt2::DropoutKey key{seed, static_cast<uint64_t>(step * n + a + 1), rows.first_row};
    out.loss += trainer_.forward(params_, inputs_, targets_, key);
    trainer_.backward(grads_, static_cast<float>(grad_scale / static_cast<double>(n)),
                      a == 0 ? gpt2::GradMode::overwrite : gpt2::GradMode::accumulate,
                      a == n - 1 ? grad_done_ : GradDone());
  }
  out.loss /= static_cast<double>(n);
  out.objective = out.loss;
  return out;
}

StepLoss Gpt2Trainable::evaluate(const Rows& rows, int64_t micro_rows) {
  const float rate = trainer_.options().dropout;
  trainer_.set_dropout(0.0f);
  const int64_t n = rows.count / micro_rows;
  StepLoss out;
  for (int64_t a = 0; a < n; ++a) {
    out.tokens += gpt2_micro_batch(rows, a, micro_rows, trainer_.options(), inputs_, targets_);
    out.loss += trainer_.forward(params_, inputs_, targets_);
  }
  trainer_.set_dropout(rate);
  out.loss /= static_cast<double>(n);
  out.objective = out.loss;
  return out;
}

// 6 N for the matrix products of forward and backward (N counting the tied head once), plus
// attention's two T x T products: PaLM's 12 L T C (appendix B), halved for the causal mask.
double gpt2_flops_per_token(const gpt2::Config& c, size_t params, int64_t seq_len) {
  const double n = static_cast<double>(params) -
                   static_cast<double>(c.n_positions) * c.n_embd;  // position table: a lookup
  return 6.0 * n + 6.0 * c.n_layer * seq_len * c.n_embd;
}

double Gpt2Trainable::flops_per_token() const {
  return gpt2_flops_per_token(config(), params_.size(), trainer_.options().seq_len);
}

std::vector<std::unique_ptr<Trainable<float>>> gpt2_replicas(
    const gpt2::Config& config, std::vector<float> params, const gpt2::TrainerOptions& per_shard,
    int64_t devices, const std::shared_ptr<kernels::vulkan::Context>& gpu) {
  check(devices >= 1, "gpt2: at least one device is needed");
  const auto make = [&](std::vector<float> p) -> std::unique_ptr<Trainable<float>> {
    if (gpu) return gpt2_device_trainable(gpu, config, std::move(p), per_shard);
    return std::make_unique<Gpt2Trainable>(config, std::move(p), per_shard);
  };
  std::vector<std::unique_ptr<Trainable<float>>> replicas;
  for (int64_t s = 1; s < devices; ++s) replicas.push_back(make(params));
  replicas.push_back(make(std::move(params)));
  return replicas;
}

}  // namespace tinylm::train
