// bench_train_run: what `tinylm train` adds to the training step itself, for GPT-2 on text.
//
// A 124M model (fresh weights) trains on data/tinyshakespeare.txt (tokenized once into a
// token file, memory-mapped) with B x T windows from the counter RNG. Measured in one
// process, alternating: the bare step (the same pre-filled rows every step: forward,
// backward, clipping, AdamW) and the step with its data (the rows drawn and copied from the
// token file); an evaluation of --eval-batches validation batches; a checkpoint (the model
// as model.safetensors + train_state.bin with both AdamW moments, written and committed
// atomically) and loading them back as a resumed run does, beside the same bytes written to
// one plain file and fsync'd (the disk's floor: shared disks vary by several times between
// runs, so the ratio is the figure to compare). The overhead printed is the
// share of wall time data, evaluation and checkpoints take at the default cadence
// (evaluation every 100 steps, a checkpoint every 500).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/family.h"
#include "tinylm/models/gpt2/init.h"
#include "tinylm/tokenizers/bpe.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/run_dir.h"
#include "tinylm/train/token_file.h"
#include "tinylm/train/train_state.h"
#include "tinylm/train/window_data.h"

using namespace tinylm;
using namespace tinylm::train;

namespace {

// The same rows every step: the step without its data.
class FixedRows final : public StepData {
 public:
  explicit FixedRows(Rows rows, int64_t micro) : rows_(rows), micro_(micro) {}
  Rows train_rows(int64_t) override { return rows_; }
  int64_t micro_rows() const override { return micro_; }
  int64_t eval_batches() const override { return 0; }
  Rows eval_rows(int64_t) override { return rows_; }

 private:
  Rows rows_;
  int64_t micro_;
};

// write(2) each piece, then fsync: what the disk alone allows for a checkpoint's bytes.
void write_and_sync(const std::string& path, std::initializer_list<std::span<const float>> pieces) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::exit(1);
  for (std::span<const float> p : pieces) {
    const char* b = reinterpret_cast<const char*>(p.data());
    size_t left = p.size_bytes();
    while (left > 0) {
      const ssize_t n = ::write(fd, b, left);
      if (n <= 0) std::exit(1);
      b += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0) std::exit(1);
  ::close(fd);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, reps = 5;
  int64_t batch = 4, seq_len = 256, eval_batches = 10;
  std::string preset = "124M";
  for (int i = 1; i < argc; ++i) {
    const auto next = [&] { return i + 1 < argc ? argv[++i] : ""; };
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "--reps"))
      reps = std::atoi(next());
    else if (!std::strcmp(argv[i], "--batch"))
      batch = std::atoll(next());
    else if (!std::strcmp(argv[i], "--seq-len"))
      seq_len = std::atoll(next());
    else if (!std::strcmp(argv[i], "--preset"))
      preset = next();
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--reps N] [--batch B] [--seq-len T] [--preset P]\n",
                   argv[0]);
      return 2;
    }
  }
  set_num_threads(threads);
  const RunConfig defaults = defaults_for(families::trainable(), "gpt2");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tinylm_bench_train_" + std::to_string(getpid())))
          .string();
  RunDir run(dir);

  const BpeTokenizer tok = BpeTokenizer::from_directory(TINYLM_SOURCE_DIR "/data/gpt2");
  const Timer tokenize_clock;
  const TokenFileBuild tokens = build_or_reuse_token_file(
      run.tokens_bin(), std::vector<std::string>{TINYLM_SOURCE_DIR "/data/tinyshakespeare.txt"},
      {"gpt2-bench", tok.vocab_size(), tok.eot_id()},
      [&](std::string_view t) { return tok.encode(t, true); });
  const double tokenize_s = tokenize_clock.elapsed_ms() / 1e3;
  const WindowSampler sampler(split_tokens(tokens.file.size(), 0.1, seq_len), batch, seq_len, 1, 0,
                              DataOrder::random);
  WindowData data(tokens.file, sampler, batch, 1, eval_batches);

  gpt2::Config config = gpt2::preset(preset);
  Gpt2Trainable model(config, gpt2::init_params(config, 1),
                      {static_cast<int>(batch), static_cast<int>(seq_len), 0.0f, DType::f32});
  LoopOptions options;
  options.steps = 1 << 30;
  options.lr = {6e-4, 6e-5, 0, options.steps, optim::LrDecay::cosine};
  options.clip = 1.0;
  std::vector<int32_t> fixed(static_cast<size_t>(batch * (seq_len + 1)));
  sampler.fill_step(tokens.file, 0, fixed);
  FixedRows bare_data({fixed, batch, seq_len + 1}, batch);
  TrainLoop<float> with_data(model, data, options), bare(model, bare_data, options);

  std::printf("%s\n", bench::level_line().c_str());
  std::printf(
      "GPT-2 %s (%zu parameters) on tinyshakespeare (%lld tokens, tokenized in %.2f s), B=%lld "
      "T=%lld, AdamW, %d threads, medians of %d\n",
      preset.c_str(), model.params().size(), static_cast<long long>(tokens.file.size()), tokenize_s,
      static_cast<long long>(batch), static_cast<long long>(seq_len), num_threads(), reps);
  // Round 0 warms up (first touch); then the two steps alternate.
  std::vector<double> bare_ms, data_ms, eval_ms, save_s, load_s, floor_s;
  for (int r = 0; r <= reps; ++r) {
    // One step through each loop: should_stop ends run() after it.
    for (int k = 0; k < 2; ++k) {
      TrainLoop<float>& loop = k == 0 ? bare : with_data;
      LoopHooks hooks;
      int64_t seen = 0;
      hooks.should_stop = [&] { return ++seen >= 1; };
      double ms = 0;
      hooks.on_step = [&](const StepRecord& rec) { ms = rec.step_s * 1e3; };
      loop.run(hooks);
      if (r > 0) (k == 0 ? bare_ms : data_ms).push_back(ms);
    }
    const Timer e;
    with_data.evaluate();
    if (r > 0) eval_ms.push_back(e.elapsed_ms());
    // A checkpoint as the run writes one (the previous one's writes flushed first, as they
    // are long done when a run writes its next), and loading it back.
    sync();
    const Timer save_clock;
    const std::string tmp = run.begin_checkpoint(r + 1);
    checkpoints::save_gpt2(tmp, config, model.params());
    TrainState<float> state;
    state.arch = "gpt2";
    state.loop.step = r + 1;
    state.config = to_json(defaults);
    save_train_state(tmp + "/train_state.bin", state, with_data.first_moment(),
                     with_data.second_moment());
    const std::string committed = run.commit_checkpoint(r + 1, 1);
    if (r > 0) save_s.push_back(save_clock.elapsed_ms() / 1e3);
    const Timer load_clock;
    const checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(committed);
    const TrainState<float> back = load_train_state<float>(committed + "/train_state.bin");
    if (r > 0) load_s.push_back(load_clock.elapsed_ms() / 1e3);
    if (ck.params.size() != model.params().size() || back.m.size() != ck.params.size()) return 1;
    // The disk's own floor: the same bytes in one plain file, written and fsync'd.
    sync();
    const Timer floor_clock;
    write_and_sync(dir + "/floor.bin",
                   {model.params(), with_data.first_moment(), with_data.second_moment()});
    if (r > 0) floor_s.push_back(floor_clock.elapsed_ms() / 1e3);
    std::filesystem::remove(dir + "/floor.bin");
  }
  const double step_bare = median(bare_ms), step_data = median(data_ms), eval = median(eval_ms),
               save = median(save_s), load = median(load_s), floor = median(floor_s);
  const double tokens_per_step = static_cast<double>(batch * seq_len);
  const double cadence_s = 500 * step_data / 1e3 + 5 * eval / 1e3 + save;
  const double overhead = 1.0 - 500 * step_bare / 1e3 / cadence_s;
  std::printf("step without data      %8.1f ms  %8.0f tok/s\n", step_bare,
              tokens_per_step / step_bare * 1e3);
  std::printf("step with its data     %8.1f ms  %8.0f tok/s  (%.2fx the bare step)\n", step_data,
              tokens_per_step / step_data * 1e3, step_data / step_bare);
  std::printf("evaluation, %lld batches %6.1f ms\n", static_cast<long long>(eval_batches), eval);
  std::printf(
      "checkpoint (model + AdamW state, %.2f GB) written in %.2f s, loaded in %.2f s; the same "
      "bytes as one plain file written and fsync'd in %.2f s (checkpoint / plain %.2fx)\n",
      static_cast<double>(model.params().size()) * 12 / 1e9, save, load, floor, save / floor);
  std::printf(
      "at the default cadence (eval every 100 steps, checkpoint every 500): data, evaluation and "
      "checkpoints take %.1f%% of the wall time; training on text runs at %.0f tok/s, %.1f%% "
      "below the bare step\n",
      100 * overhead, 500 * tokens_per_step / cadence_s, 100 * overhead);
  std::filesystem::remove_all(dir);
  return 0;
}
