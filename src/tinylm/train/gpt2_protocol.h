#pragma once
// `tinylm train-gpt2`, the fixed-batch GPT-2 reference protocol, as a library call: the same
// 4 x 65 token grid (inputs 4 x 64, targets shifted by one) every step, plain SGD at a constant
// rate, no clipping, loss scaling under f16, the loss before each update and per-step weight
// fingerprints (gpt2_metrics.h), so a run can be compared number for number with other
// implementations. A thin configuration of the shared loop (loop.h) over replicas (replicas.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/models/gpt2/config.h"
#include "tinylm/train/gpt2_metrics.h"
#include "tinylm/train/loop.h"

namespace tinylm::train {

struct Gpt2ProtocolOptions {
  int64_t steps = 20;
  double lr = 1e-4;
  double dropout = 0.0;
  std::string compute = "f32";  // f32 | bf16 | f16 (f16 adds dynamic loss scaling)
  uint64_t seed = 0;            // the dropout masks, keyed by (seed, step), the step 1-based
  int64_t devices = 1;          // replicas in this process, each on its shard of the batch; under
                        // mpirun every process trains its shards (distributed::Comm::world())
  std::string overlap = "auto";  // auto | on | off: the gradient exchange during the backward
  std::string device = "cpu";    // cpu | gpu | gpu:N: where the forward and backward run
  bool record_weights = false;   // fingerprint the weights after each step (the metrics JSON)
};

class Gpt2Protocol {
 public:
  static constexpr int64_t kBatch = 4, kSeq = 64;  // the grid: kBatch rows of kSeq + 1 ids

  // Every option's value for this many processes, before any file is read: a FlagError naming
  // the flag.
  static void check(const Gpt2ProtocolOptions& options, int64_t processes);

  // `grid`: kBatch x (kSeq + 1) ids (load_token_grid). Checks the options.
  Gpt2Protocol(const gpt2::Config& config, std::vector<float> params, std::vector<int32_t> grid,
               const Gpt2ProtocolOptions& options);
  ~Gpt2Protocol();

  // The model's loss on the batch before any update, measured without dropout; kept in
  // metrics().
  float initial_loss();

  // Trains the steps: on_step after each (before its weights are fingerprinted), should_stop
  // checked after each. Returns the steps done. Under f32 and bf16 a non-finite step is an Error
  // (no loss scale to lower: training diverged; the parameters are those before it).
  int64_t run(const std::function<void(const StepRecord&)>& on_step,
              const std::function<bool()>& should_stop);

  bool loss_scaled() const;  // f16
  const gpt2::Config& config() const { return config_; }
  std::span<const float> params() const;
  const RunMetrics& metrics() const { return metrics_; }
  // "N steps in X s: median M ms/step (min A, max B)\n"; empty before any step.
  std::string timing_summary() const;

 private:
  class FixedBatch;
  gpt2::Config config_;
  Gpt2ProtocolOptions options_;
  std::unique_ptr<FixedBatch> data_;
  std::unique_ptr<Trainable<float>> model_;
  std::unique_ptr<TrainLoop<float>> loop_;
  RunMetrics metrics_;
  std::vector<double> step_ms_;
};

// The protocol's stdout line for a step: "step   3  loss 10.98..." and, when the loss is
// scaled, "  scale 65536" and whether the step was skipped. No newline.
std::string protocol_step_line(const StepRecord& r, bool loss_scaled);

}  // namespace tinylm::train
