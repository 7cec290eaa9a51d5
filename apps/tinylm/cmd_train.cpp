// tinylm train --arch NAME: train a model on a text file. Each architecture registers a
// runner in kArchitectures; the flags are shared, and an architecture rejects the ones it
// cannot honour. EvermindLM is the one trained here (GPT-2 has train-gpt2's protocol).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "commands.h"
#include "evermind_common.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/generate/evermind_generate.h"
#include "tinylm/io/evl_checkpoint.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/bpe_trainer.h"
#include "tinylm/train/evermind_fit.h"

namespace tinylm::cli {

namespace {

struct TrainFlags {
  std::string arch, data, tokenizer, tokenizer_out, out, init_from, precision = "f32";
  int vocab_size = 4096, seq_len = 128, batch = 1, accum = 1, epochs = 1, threads = 0,
      sample_every = 0;
  int64_t d_model = 64, n_layers = 2, conv_kernel = 3, hidden_dim = 0, n_experts = 4, top_k = 2;
  double lr = 1e-3, weight_decay = 0.01, clip = 0.0, aux_loss_coef = 0.01;
  bool checkpoint_activations = false, mixed_precision = false;
  uint64_t seed = 0;
};

// Splits the token stream into consecutive sequences of seq_len tokens (a shorter last one is
// kept when it has the 2 tokens a next-token loss needs).
std::vector<std::vector<int>> chunk(const std::vector<int>& ids, int seq_len) {
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < ids.size(); i += static_cast<size_t>(seq_len)) {
    const size_t end = std::min(ids.size(), i + static_cast<size_t>(seq_len));
    if (end - i >= 2)
      out.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(i),
                       ids.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

std::string clock(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

void train_evermind(const TrainFlags& f) {
  check(f.seq_len >= 2, "--seq-len must be at least 2 (got ", f.seq_len, ")");
  check(f.batch >= 1 && f.accum >= 1 && f.epochs >= 1,
        "--batch, --accum and --epochs must be at least 1");
  const io::EvlPrecision precision = io::parse_evl_precision(f.precision);
  set_num_threads(f.threads);
  const std::string text = io::read_file(f.data);
  check(!text.empty(), f.data, ": the corpus is empty");

  // The tokenizer: given, or trained on the corpus and saved next to the model.
  Timer timer;
  BpeTokenizer tok = [&] {
    if (!f.tokenizer.empty()) return load_evermind_tokenizer(f.tokenizer, f.out);
    BpeTrainConfig tc;
    tc.vocab_size = f.vocab_size;
    const BpeTrainResult trained = train_bpe(text, tc);
    const std::string path =
        f.tokenizer_out.empty() ? default_evermind_tokenizer_path(f.out) : f.tokenizer_out;
    trained.save_tokenizer_json(path);
    std::fprintf(stderr, "tokenizer: %d tokens trained on %s in %.1f s, saved to %s\n",
                 trained.vocab_size(), f.data.c_str(), timer.elapsed_ms() / 1e3, path.c_str());
    return trained.tokenizer();
  }();
  const std::vector<int> ids = tok.encode(text, /*allow_special=*/true);
  const std::vector<std::vector<int>> sequences = chunk(ids, f.seq_len);
  check(!sequences.empty(), f.data, ": too short to make one training sequence of 2 tokens");

  evermind::Config config;
  if (!f.init_from.empty()) {  // go on from a checkpoint: its shape, its weights
    config = io::read_evl_header(f.init_from).config;
    check(config.vocab_size >= tok.vocab_size(), f.init_from, ": its vocabulary of ",
          config.vocab_size, " tokens is smaller than the tokenizer's ", tok.vocab_size());
  } else {
    config.vocab_size = tok.vocab_size();
    config.d_model = f.d_model;
    config.n_layers = f.n_layers;
    config.conv_kernel = f.conv_kernel;
    config.hidden_dim = f.hidden_dim > 0 ? f.hidden_dim : 2 * f.d_model;
    config.n_experts = f.n_experts;
    config.top_k = f.top_k;
  }
  config.seed = f.seed;
  evermind::Model<float> model = f.init_from.empty() ? evermind::Model<float>(config, f.seq_len)
                                                     : load_evermind(f.init_from, f.seq_len);

  train::EvermindFitOptions opt;
  opt.epochs = f.epochs;
  opt.accum_steps = static_cast<int64_t>(f.batch) * f.accum;
  opt.lr = f.lr;
  opt.adam.weight_decay = f.weight_decay;
  opt.clip_norm = f.clip;
  opt.aux_loss_coef = f.aux_loss_coef;
  opt.checkpoint_activations = f.checkpoint_activations;
  opt.mixed_precision = f.mixed_precision;
  opt.seed = f.seed;
  std::fprintf(stderr,
               "evermind: %zu parameters, %zu tokens in %zu sequences of up to %d, %lld sequences "
               "per step\n",
               model.params().size(), ids.size(), sequences.size(), f.seq_len,
               static_cast<long long>(opt.accum_steps));

  const bool tty = isatty(STDERR_FILENO) != 0;
  const int64_t total_steps =
      f.epochs * ((static_cast<int64_t>(sequences.size()) + opt.accum_steps - 1) / opt.accum_steps);
  const int64_t sample_every =
      f.sample_every > 0 ? f.sample_every : std::max<int64_t>(1, total_steps / 4);
  const int64_t report_every = tty ? 1 : std::max<int64_t>(1, total_steps / 20);
  int64_t tokens_seen = 0;
  Timer clock_all;
  opt.on_step = [&](const train::EvermindStep& s) {
    tokens_seen += s.tokens;
    const double secs = clock_all.elapsed_ms() / 1e3;
    if (s.step % report_every == 0 || s.step == s.total_steps) {
      const int width = 24,
                done = static_cast<int>(width * s.step / std::max<int64_t>(1, s.total_steps));
      std::fprintf(
          stderr, "%s[%s%s] step %lld/%lld  epoch %lld  loss %.4f  %.0f tok/s  ETA %s%s%s",
          tty ? "\r" : "", std::string(static_cast<size_t>(done), '#').c_str(),
          std::string(static_cast<size_t>(width - done), '.').c_str(),
          static_cast<long long>(s.step), static_cast<long long>(s.total_steps),
          static_cast<long long>(s.epoch + 1), s.loss, tokens_seen / std::max(secs, 1e-9),
          clock(secs / static_cast<double>(s.step) * static_cast<double>(s.total_steps - s.step))
              .c_str(),
          s.skipped ? "  (skipped: fp16 overflow)" : "", tty ? "" : "\n");
    }
    if (s.step % sample_every == 0 && s.step != s.total_steps) {
      generate::EvermindGenerateOptions g;
      g.max_new_tokens = 32;
      g.stop_token = tok.eot_id().value_or(-1);
      const std::string sample = generate::generate_text(model, tok, "", g);
      std::fprintf(stderr, "%ssample: %s\n", tty ? "\n" : "", sample.c_str());
    }
  };
  const train::EvermindFitResult r = train::fit(model, sequences, opt);
  if (tty) std::fprintf(stderr, "\n");
  for (size_t e = 0; e < r.epoch_loss.size(); ++e) {
    std::printf("epoch %zu: mean loss %.4f (cross-entropy %.4f)\n", e + 1, r.epoch_loss[e],
                r.epoch_ce[e]);
  }
  if (f.mixed_precision) {
    std::printf("mixed precision: final loss scale %g, %lld of %lld steps skipped\n", r.loss_scale,
                static_cast<long long>(r.skipped_steps), static_cast<long long>(r.steps));
  }
  io::save_evl(f.out, config, model.params(), precision);
  std::fprintf(stderr, "%lld tokens in %.1f s (%.0f tok/s); model written to %s\n",
               static_cast<long long>(r.tokens), clock_all.elapsed_ms() / 1e3,
               r.tokens / (clock_all.elapsed_ms() / 1e3), f.out.c_str());
}

// Architectures `tinylm train` knows.
const std::map<std::string, std::function<void(const TrainFlags&)>> kArchitectures = {
    {"evermind", train_evermind},
};

}  // namespace

void register_train(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model on a text file (--arch evermind)");
  cmd->add_option("--arch", f->arch, "Architecture: evermind")->required();
  cmd->add_option("--data", f->data, "Training text (UTF-8)")->required();
  cmd->add_option("--out", f->out, "Checkpoint to write (model.evl)")->required();
  cmd->add_option("--tokenizer", f->tokenizer,
                  "An existing tokenizer.json (default: train one on --data)");
  cmd->add_option("--init-from", f->init_from,
                  "Continue from this checkpoint (its shape and weights)");
  cmd->add_option("--vocab-size", f->vocab_size, "Vocabulary of the trained tokenizer")
      ->capture_default_str();
  cmd->add_option("--tokenizer-out", f->tokenizer_out,
                  "Where to save it (default: next to --out, .tokenizer.json)");
  cmd->add_option("--seq-len", f->seq_len, "Tokens per training sequence")->capture_default_str();
  cmd->add_option("--batch", f->batch, "Sequences per micro-batch")->capture_default_str();
  cmd->add_option("--accum", f->accum, "Micro-batches averaged per optimizer step")
      ->capture_default_str();
  cmd->add_option("--epochs", f->epochs, "Passes over the data")->capture_default_str();
  cmd->add_option("--lr", f->lr, "AdamW learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", f->weight_decay, "AdamW decoupled weight decay")
      ->capture_default_str();
  cmd->add_option("--clip", f->clip, "Clip the global gradient norm to this (0: off)")
      ->capture_default_str();
  cmd->add_option("--aux-loss-coef", f->aux_loss_coef, "Load-balancing loss weight (0: off)")
      ->capture_default_str();
  cmd->add_flag("--checkpoint-activations", f->checkpoint_activations,
                "Recompute each layer in backward");
  cmd->add_flag("--mixed-precision", f->mixed_precision,
                "fp16 gradients with dynamic loss scaling");
  cmd->add_option("--precision", f->precision, "Checkpoint weights: f32 or f16")
      ->capture_default_str();
  cmd->add_option("--d-model", f->d_model, "Model width")->capture_default_str();
  cmd->add_option("--layers", f->n_layers, "Layers")->capture_default_str();
  cmd->add_option("--conv-kernel", f->conv_kernel, "Causal conv taps")->capture_default_str();
  cmd->add_option("--hidden-dim", f->hidden_dim, "Expert FFN width (default 2 x d-model)");
  cmd->add_option("--experts", f->n_experts, "Routed experts")->capture_default_str();
  cmd->add_option("--top-k", f->top_k, "Experts per token")->capture_default_str();
  cmd->add_option("--seed", f->seed, "Initialization and data-order seed")->capture_default_str();
  cmd->add_option("--sample-every", f->sample_every,
                  "Print a sample every N steps (default: 4 per run)");
  cmd->add_option("--threads", f->threads, "Threads (default: all cores)");
  cmd->callback([f] {
    const auto it = kArchitectures.find(f->arch);
    if (it == kArchitectures.end()) {
      fail("--arch ", f->arch,
           " cannot be trained by `tinylm train` (known: evermind; GPT-2 has train-gpt2)");
    }
    it->second(*f);
  });
}

}  // namespace tinylm::cli
