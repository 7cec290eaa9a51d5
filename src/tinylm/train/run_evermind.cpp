// EvermindLM's part of a training run: a byte-level BPE trained on the run's text (or a given
// tokenizer.json), kept as RUN/tokenizer.json; the model from the shape flags or an EVL0
// checkpoint; checkpoints as EVL0 files (f32, so a resumed run continues from the exact
// weights) with the tokenizer beside them, where `tinylm generate` looks for it.
#include <filesystem>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/bpe_trainer.h"
#include "tinylm/train/evermind_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_session.h"
#include "tinylm/train/run_tokenizer.h"

namespace tinylm::train {

namespace fs = std::filesystem;

RunSummary run_evermind(const RunConfig& c, RunDir& dir, const RunRequest& request,
                        const std::optional<Checkpoint>& resume) {
  std::optional<TrainState<float>> state = resume_state<float>(c, resume, request.log);
  const RunTokenizer vocab = run_tokenizer(c, dir, request, resume.has_value());
  const BpeTokenizer& tok = vocab.tokenizer;

  const int64_t width = c.seq_len + 1;  // a window predicts seq_len tokens
  const std::string from = resume ? resume->path + "/model.evl" : c.init_from;
  std::optional<evermind::Model<float>> model;
  if (!from.empty()) {
    const checkpoints::EvlCheckpoint ck = checkpoints::load_evl(from);
    model.emplace(ck.config, width, ck.params);
  } else {
    model.emplace(evermind_config(c, tok.vocab_size()), width);
  }
  const evermind::Config& config = model->config();
  check(tok.vocab_size() <= config.vocab_size, vocab.path, ": ", tok.vocab_size(),
        " tokens, more than the model's vocabulary of ", config.vocab_size);

  TextData text(
      c, dir, vocab.identity, [&](std::string_view t) { return tok.encode(t, true); }, request.log);

  EvermindTrainOptions options;
  options.aux_loss_coef = c.aux_loss_coef;
  options.checkpoint_activations = c.checkpoint_activations;
  options.fp16_grads = c.mixed_precision;
  options.threads = static_cast<int>(c.threads);
  options.max_rows = shard_rows(c) * c.accum;
  // One replica per device (the first trains `model` itself), each on its shard of the batch.
  std::vector<std::unique_ptr<evermind::Model<float>>> copies;
  Replicas<float> trainable(evermind_replicas(*model, options, c.devices, copies),
                            overlap_exchange(c));
  std::fprintf(request.log,
               "evermind: %zu parameters (%lld layers, width %lld, %lld experts top-%lld), %lld "
               "training and %lld validation tokens%s\n",
               model->params().size(), static_cast<long long>(config.n_layers),
               static_cast<long long>(config.d_model), static_cast<long long>(config.n_experts),
               static_cast<long long>(config.top_k),
               static_cast<long long>(text.sampler.split().n_train),
               static_cast<long long>(text.sampler.split().n_val),
               text.tokens.reused ? " (tokens.bin reused)" : "");
  const auto save = [&](const std::string& out) {
    checkpoints::save_evl(out + "/model.evl", config, model->params(),
                          checkpoints::EvlPrecision::f32);
    fs::copy_file(vocab.path, checkpoints::evl_tokenizer_path(out + "/model.evl"));
  };
  return drive<float>(c, dir, request, {trainable, text.data, save}, std::move(state));
}

}  // namespace tinylm::train
