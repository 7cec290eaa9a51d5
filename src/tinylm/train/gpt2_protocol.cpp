#include "tinylm/train/gpt2_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_config.h"

namespace tinylm::train {

// The protocol's one batch, every step.
class Gpt2Protocol::FixedBatch final : public StepData {
 public:
  explicit FixedBatch(std::vector<int32_t> grid) : grid_(std::move(grid)) {}
  Rows train_rows(int64_t) override { return rows(); }
  int64_t micro_rows() const override { return kBatch; }
  int64_t eval_batches() const override { return 0; }
  Rows eval_rows(int64_t) override { return rows(); }
  Rows rows() const { return {grid_, kBatch, kSeq + 1}; }

 private:
  std::vector<int32_t> grid_;
};

void Gpt2Protocol::check(const Gpt2ProtocolOptions& o, int64_t processes) {
  const auto need = [](bool ok, auto&&... what) {
    if (!ok) throw FlagError(cat(what...));
  };
  need(o.steps >= 0, "--steps must be non-negative (got ", o.steps, ")");
  need(std::isfinite(o.lr) && o.lr >= 0.0, "--lr must be finite and >= 0 (got ", o.lr, ")");
  need(o.dropout >= 0.0 && o.dropout < 1.0, "--dropout must be in [0, 1) (got ", o.dropout, ")");
  try {
    parse_compute_dtype(o.compute);
    if (const int gpu = kernels::vulkan::parse_device(o.device); gpu >= 0)
      kernels::vulkan::check_gpu(gpu);
  } catch (const Error& e) {
    throw FlagError(e.what());
  }
  const int64_t shards = processes * o.devices;
  need(o.devices >= 1 && kBatch % shards == 0, "--devices ", o.devices, ": the batch of ", kBatch,
       " rows must split into equal shards (processes x devices = ", shards, "; 1, 2 or 4 shards)");
}

Gpt2Protocol::Gpt2Protocol(const gpt2::Config& config, std::vector<float> params,
                           std::vector<int32_t> grid, const Gpt2ProtocolOptions& options)
    : config_(config), options_(options), data_(std::make_unique<FixedBatch>(std::move(grid))) {
  distributed::Comm& comm = distributed::Comm::world();
  check(options, comm.size());
  const int64_t shards = comm.size() * options.devices;
  const DType compute = parse_compute_dtype(options.compute);
  const gpt2::TrainerOptions per_shard{static_cast<int>(kBatch / shards), static_cast<int>(kSeq),
                                       static_cast<float>(options.dropout), compute};
  const int gpu_index = kernels::vulkan::parse_device(options.device);
  std::shared_ptr<kernels::vulkan::Context> gpu;
  if (gpu_index >= 0) {
    check_gpt2_fits_gpu(gpu_index, config, per_shard, options.devices);
    gpu = kernels::vulkan::open_gpu(gpu_index);
  }
  // One replica per device, each on its shard of the batch.
  model_ = std::make_unique<Replicas<float>>(
      gpt2_replicas(config, std::move(params), per_shard, options.devices, gpu),
      comm.overlap_exchange(distributed::parse_overlap(options.overlap), num_threads()));
  LoopOptions loop;
  loop.steps = options.steps;
  loop.lr = {options.lr, 0.0, 0, options.steps, optim::LrDecay::constant};
  loop.optimizer = Optimizer::sgd;
  loop.clip = 0.0;
  loop.loss_scaling = loss_scaled();  // f16: skipped steps halve the scale, as long as they come
  loop.max_bad_steps = std::numeric_limits<int64_t>::max();  // f32, bf16: stopped in run()
  loop.seed = options.seed;
  loop_ = std::make_unique<TrainLoop<float>>(*model_, *data_, loop);
  metrics_.steps = options.steps;
  metrics_.devices = shards;
  if (gpu) metrics_.gpu = kernels::vulkan::device_name(*gpu);
  metrics_.batch_size = kBatch;
  metrics_.seq_len = kSeq;
  metrics_.lr = options.lr;
  metrics_.n_params = static_cast<int64_t>(model_->layout().entries().size());
}

Gpt2Protocol::~Gpt2Protocol() = default;

bool Gpt2Protocol::loss_scaled() const { return options_.compute == "f16"; }

std::span<const float> Gpt2Protocol::params() const { return model_->params(); }

float Gpt2Protocol::initial_loss() {
  metrics_.initial_loss = static_cast<float>(model_->evaluate(data_->rows(), kBatch).loss);
  return metrics_.initial_loss;
}

int64_t Gpt2Protocol::run(const std::function<void(const StepRecord&)>& on_step,
                          const std::function<bool()>& should_stop) {
  LoopHooks hooks;
  hooks.on_step = [&](const StepRecord& r) {
    tinylm::check(!r.skipped || loss_scaled(), "the loss (", r.loss,
                  ") or a gradient is not finite at step ", r.step,
                  " (training diverged; parameters left as they were before this step)");
    step_ms_.push_back(r.step_s * 1e3);
    if (on_step) on_step(r);
    if (options_.record_weights) {
      loop_->params_to_host();
      metrics_.records.push_back({r.step, static_cast<float>(r.loss), r.step_s * 1e3,
                                  fingerprint_weights(config_, model_->params())});
    }
  };
  hooks.should_stop = should_stop;
  loop_->run(hooks);
  return loop_->state().step;
}

std::string Gpt2Protocol::timing_summary() const {
  if (step_ms_.empty()) return "";
  std::vector<double> sorted = step_ms_;
  std::sort(sorted.begin(), sorted.end());
  double total = 0;
  for (const double ms : step_ms_) total += ms;
  char line[160];
  std::snprintf(line, sizeof line,
                "%zu steps in %.2f s: median %.2f ms/step (min %.2f, max %.2f)\n", step_ms_.size(),
                total / 1e3, sorted[sorted.size() / 2], sorted.front(), sorted.back());
  return line;
}

std::string protocol_step_line(const StepRecord& r, bool loss_scaled) {
  char head[32];
  std::snprintf(head, sizeof head, "step %3d  loss ", static_cast<int>(r.step));
  std::string line = head + py_repr(static_cast<float>(r.loss));
  if (loss_scaled) {
    char scale[64];
    std::snprintf(scale, sizeof scale, "  scale %g", r.loss_scale);
    line += scale;
    if (r.skipped) line += "  (skipped: gradients overflowed)";
  }
  return line;
}

}  // namespace tinylm::train
