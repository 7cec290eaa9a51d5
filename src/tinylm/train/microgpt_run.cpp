#include "tinylm/train/microgpt_run.h"

#include <cstdio>
#include <ostream>

#include "tinylm/checkpoints/microgpt_checkpoint.h"
#include "tinylm/checkpoints/sniff.h"
#include "tinylm/core/error.h"
#include "tinylm/core/py_random.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/generate.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/char_tokenizer.h"
#include "tinylm/train/document_data.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/microgpt_trainable.h"

namespace tinylm::train {

namespace {
template <class... Args>
std::string format(const char* fmt, Args... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}
}  // namespace

MicrogptResult run_microgpt(const MicrogptOptions& opt, std::ostream& out, bool carriage_return) {
  MicrogptResult result;
  Timer timer;
  const int steps = opt.steps.value_or(opt.load_path.empty() ? 1000 : 0);
  check(steps >= 0, "--steps must be non-negative, got ", steps);
  check(opt.samples >= 0, "--samples must be non-negative, got ", opt.samples);
  check(opt.temperature > 0.0, "--temperature must be positive, got ", opt.temperature);
  check(opt.lr > 0.0, "--lr must be positive, got ", opt.lr);

  PyRandom rng(opt.seed);
  io::Documents data = io::read_documents(opt.data_path);
  const std::span<std::string_view> docs = data.views();
  rng.shuffle(docs);
  out << "num docs: " << docs.size() << '\n';

  const CharTokenizer tokenizer = CharTokenizer::from_documents(docs);
  microgpt::Config config = opt.model;
  config.vocab_size = tokenizer.vocab_size();
  config.validate();
  out << "vocab size: " << config.vocab_size << '\n';

  const std::unique_ptr<microgpt::Model> model = microgpt::make_model(config, opt.engine);
  // Draw the initial weights even when loading, so the sampling stream that follows is the
  // one the original run used: a saved-and-loaded model samples what the run sampled.
  for (double& p : model->params()) p = rng.gauss(0.0, 0.08);
  if (!opt.load_path.empty()) {
    // A run directory or a checkpoint step-N/ stands for its model.safetensors.
    const checkpoints::Sniffed found = checkpoints::sniff(opt.load_path);
    const std::string& load_path =
        found.format == checkpoints::Format::safetensors ? found.path : opt.load_path;
    const checkpoints::MicrogptCheckpoint ck = checkpoints::load_microgpt(load_path);
    const microgpt::Config& c = ck.config;
    check(c.n_embd == config.n_embd && c.n_head == config.n_head && c.n_layer == config.n_layer &&
              c.block_size == config.block_size,
          load_path, ": model configuration (n_embd ", c.n_embd, ", n_head ", c.n_head,
          ", n_layer ", c.n_layer, ", block_size ", c.block_size,
          ") differs from the command line's");
    check(ck.chars == tokenizer.chars_utf8(), load_path, ": character set differs from ",
          opt.data_path, "'s");
    std::copy(ck.params.begin(), ck.params.end(), model->params().begin());
  }
  out << "num params: " << model->params().size() << '\n';
  result.timings.setup_ms = timer.elapsed_ms();

  timer.reset();
  // The shared training loop with microgpt.py's settings: one document per step, Adam
  // (no weight decay, no clipping) at a rate decaying linearly to 0.
  DocumentData steps_data(docs, tokenizer, /*n_val=*/0, /*eval_docs=*/0);
  MicrogptTrainable trainable(*model);
  LoopOptions loop_options;
  loop_options.steps = steps;
  loop_options.lr = {opt.lr, 0.0, 0, steps, optim::LrDecay::linear};
  loop_options.adam = {opt.beta1, opt.beta2, opt.eps, 0.0};
  loop_options.clip = 0.0;
  loop_options.max_bad_steps = 0;
  TrainLoop<double> loop(trainable, steps_data, loop_options);
  const char end = carriage_return ? '\r' : '\n';
  LoopHooks hooks;
  hooks.on_step = [&](const StepRecord& r) {
    result.losses.push_back(r.loss);
    out << format("step %4d / %4d | loss %.4f", static_cast<int>(r.step), steps, r.loss) << end;
    if (carriage_return) out.flush();
  };
  loop.run(hooks);
  if (carriage_return && steps > 0) out << '\n';
  result.timings.train_ms = timer.elapsed_ms();
  if (!opt.save_path.empty())
    checkpoints::save_microgpt(opt.save_path, *model, tokenizer, static_cast<int64_t>(docs.size()));

  timer.reset();
  out << "\n--- inference (new, hallucinated names) ---\n";
  // Each name: the generate loop from BOS until BOS is drawn or block_size positions are used,
  // drawing with the run's RNG (microgpt.py's sampling).
  const auto decoder = generate::microgpt_backend(*model, rng);
  const int bos = tokenizer.bos();
  generate::GenerateOptions name;
  name.max_tokens = config.block_size;
  name.sampling.temperature = opt.temperature;
  name.eos_id = bos;
  for (int i = 0; i < opt.samples; ++i) {
    const std::vector<int> ids = generate::generate(*decoder, std::span(&bos, 1), name).ids;
    result.samples.push_back(tokenizer.decode(ids));
    out << format("sample %2d: ", i + 1) << result.samples.back() << '\n';
  }
  result.timings.sample_ms = timer.elapsed_ms();
  return result;
}

}  // namespace tinylm::train
