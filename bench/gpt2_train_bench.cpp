// GPT-2 training speed: one step of the fixed-batch protocol (forward, cross-entropy,
// backward, SGD) on a 124M-shaped model with random weights, B = 4, T = 64 unless given, for
// each compute dtype asked for, through the shared training loop (Gpt2Trainable + TrainLoop, as
// `tinylm train-gpt2` runs it; ms/step is the loop's own step time). Prints the median ms/step
// after a warm-up step (which pays the page faults on the freshly planned activations), the time
// split (forward / backward / inside gemm / weight casts), achieved GFLOP/s and the fraction of the
// machine's peak (MFU), and peak resident memory against parameters + gradients + planned
// activations.
//   bench_gpt2_train [--threads N] [--steps N] [--preset 124M|small-test] [--dtypes f32,bf16]
//                    [--batch 4] [--seq-len 64] [--vocab V] [--peak-gflops 384] [--json]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tinylm/core/parallel.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/loop.h"

using namespace tinylm;

namespace {

// The same batch every step.
class FixedBatch final : public train::StepData {
 public:
  FixedBatch(std::vector<int32_t> rows, int64_t count, int64_t width)
      : rows_(std::move(rows)), count_(count), width_(width) {}
  train::Rows train_rows(int64_t) override { return {rows_, count_, width_}; }
  int64_t micro_rows() const override { return count_; }
  int64_t eval_batches() const override { return 0; }
  train::Rows eval_rows(int64_t) override { return {rows_, count_, width_}; }

 private:
  std::vector<int32_t> rows_;
  int64_t count_, width_;
};

gpt2::TrainerProfile operator-(gpt2::TrainerProfile a, const gpt2::TrainerProfile& b) {
  a.steps -= b.steps;
  a.forward_ms -= b.forward_ms;
  a.backward_ms -= b.backward_ms;
  a.gemm_ms -= b.gemm_ms;
  a.cast_ms -= b.cast_ms;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, steps = 5, B = 4, T = 64, vocab = 0;
  double peak_gflops = 384;  // 2 cores x AVX-512 FMA, the figure for this machine
  std::string preset = "124M", dtypes = "f32,bf16";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--preset") && i + 1 < argc)
      preset = argv[++i];
    else if (!std::strcmp(argv[i], "--dtypes") && i + 1 < argc)
      dtypes = argv[++i];
    else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc)
      B = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seq-len") && i + 1 < argc)
      T = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--vocab") && i + 1 < argc)
      vocab = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--peak-gflops") && i + 1 < argc)
      peak_gflops = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--json"))
      json = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--steps N] [--preset P] [--dtypes f32,bf16,f16] "
                   "[--batch B] [--seq-len T] [--vocab V] [--peak-gflops G] [--json]\n",
                   argv[0]);
      return 2;
    }
  }
  set_num_threads(threads);
  gpt2::Config c = gpt2::preset(preset);
  if (vocab > 0) c.vocab_size = vocab;  // a vocabulary made from the data (--tokenizer char: 65)
  if (B < 1 || T < 1 || T > c.n_positions) {
    std::fprintf(stderr, "bench_gpt2_train: --batch must be >= 1 and --seq-len in [1, %d]\n",
                 c.n_positions);
    return 2;
  }
  std::vector<float> params(gpt2::param_layout(c).size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float& p : params) p = normal(rng);
  std::vector<int32_t> rows(B * (T + 1));  // B rows of T + 1 tokens: inputs, targets one later
  std::uniform_int_distribution<int32_t> token(0, c.vocab_size - 1);
  for (int32_t& t : rows) t = token(rng);
  // FLOPs of a step: 6 per parameter per token (forward 2, backward 4) plus attention's
  // QK^T and AV products (forward 4·T·C per token and layer, backward twice that).
  const double n = static_cast<double>(params.size());
  const double flops =
      6.0 * n * B * T + 12.0 * c.n_layer * B * static_cast<double>(T) * T * c.n_embd;
  if (!json) {
    std::printf(
        "%s\nGPT-2 %s training step, B=%d T=%d, %d threads, SGD, medians of %d steps after a "
        "warm-up\n",
        bench::level_line().c_str(), preset.c_str(), B, T, num_threads(), steps);
    std::printf("%-5s %9s %8s %8s %8s %7s %9s %6s %9s %9s %6s\n", "dtype", "ms/step", "fwd ms",
                "bwd ms", "gemm ms", "cast ms", "GFLOP/s", "MFU", "p+g+a MB", "peak MB", "ratio");
  }
  std::stringstream dts(dtypes);
  std::string name;
  std::string json_rows;
  while (std::getline(dts, name, ',')) {
    const DType dt = parse_dtype(name);
    const gpt2::TrainerOptions options{B, T, 0.0f, dt};
    gpt2::TrainerProfile p;
    std::vector<double> ms;
    {
      train::Gpt2Trainable model(c, params, options);
      FixedBatch data(rows, B, T + 1);
      train::LoopOptions o;  // train-gpt2's: SGD at the default rate, no clipping
      o.steps = 1 + steps;   // a warm-up step (first touch), then the timed ones
      o.lr = {1e-4, 0.0, 0, o.steps, optim::LrDecay::constant};
      o.optimizer = train::Optimizer::sgd;
      o.loss_scaling = dt == DType::f16;
      train::TrainLoop<float> loop(model, data, o);
      gpt2::TrainerProfile warm;
      train::LoopHooks hooks;
      hooks.on_step = [&](const train::StepRecord& r) {
        if (r.step == 1) {
          warm = model.profile();
        } else {
          ms.push_back(r.step_s * 1e3);
        }
      };
      loop.run(hooks);
      p = model.profile() - warm;
    }
    const double peak =
        bench::proc_status_bytes("VmHWM");  // whole process: includes the earlier dtypes' runs
    // The planned arena, from a trainer of the same shape made once the loop's is gone (and
    // the high-water mark read).
    const size_t activation_bytes = gpt2::Trainer(c, options).activation_bytes();
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    const double per = 1.0 / static_cast<double>(std::max<int64_t>(1, p.steps));
    const double gflops = flops / (med * 1e6);
    const double planned = 2.0 * n * sizeof(float) + static_cast<double>(activation_bytes);
    if (json) {
      char row[256];
      std::snprintf(row, sizeof row,
                    "%s{\"dtype\": \"%s\", \"ms_per_step\": %.2f, \"gflops\": %.1f}",
                    json_rows.empty() ? "" : ", ", name.c_str(), med, gflops);
      json_rows += row;
    } else {
      std::printf("%-5s %9.1f %8.1f %8.1f %8.1f %7.1f %9.1f %5.0f%% %9.1f %9.1f %6.2f\n",
                  name.c_str(), med, p.forward_ms * per, p.backward_ms * per, p.gemm_ms * per,
                  p.cast_ms * per, gflops, 100.0 * gflops / peak_gflops, planned / 1e6, peak / 1e6,
                  peak / planned);
    }
  }
  if (json) {
    std::printf("{\"preset\": \"%s\", \"threads\": %d, \"flops_per_step\": %.0f, \"rows\": [%s]}\n",
                preset.c_str(), num_threads(), flops, json_rows.c_str());
  } else {
    std::printf(
        "GFLOP/s counts %.1f GFLOP per step; MFU against %.0f GFLOP/s. peak MB is the process's "
        "high-water\n"
        "mark so far (the first dtype's is its own); p+g+a = parameters + gradients + planned "
        "activations.\n",
        flops / 1e9, peak_gflops);
  }
  return 0;
}
