// EvermindLM's part of a training run: a byte-level BPE trained on the run's text (or a given
// tokenizer.json), kept as RUN/tokenizer.json; the model from the shape flags or an EVL0
// checkpoint; checkpoints as EVL0 files (f32, so a resumed run continues from the exact
// weights) with the tokenizer beside them, where `tinylm generate` looks for it.

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/train/evermind_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_session.h"
#include "tinylm/train/run_tokenizer.h"

namespace tinylm::train {

RunSummary run_evermind(const RunConfig& c, RunDir& dir, const RunRequest& request,
                        const std::optional<Checkpoint>& resume) {
  std::optional<TrainState<float>> state = resume_state<float>(c, resume, request.log);
  RunText text(c, dir, request, resume.has_value());

  const int64_t width = c.seq_len + 1;  // a window predicts seq_len tokens
  const std::string from = resume ? resume->path + "/model.evl" : c.init_from;
  std::optional<evermind::Model<float>> model;
  if (!from.empty()) {
    const checkpoints::EvlCheckpoint ck = checkpoints::load_evl(from);
    model.emplace(ck.config, width, ck.params);
  } else {
    model.emplace(evermind_config(c, text.tokenizer().vocab_size()), width);
  }
  const evermind::Config& config = model->config();
  text.check_model_vocab(config.vocab_size);

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
               "evermind: %zu parameters (%lld layers, width %lld, %lld experts top-%lld), %s\n",
               model->params().size(), static_cast<long long>(config.n_layers),
               static_cast<long long>(config.d_model), static_cast<long long>(config.n_experts),
               static_cast<long long>(config.top_k), text.token_counts().c_str());
  const auto save = [&](const std::string& out) {
    checkpoints::save_evl(out + "/model.evl", config, model->params(),
                          checkpoints::EvlPrecision::f32);
    text.save_tokenizer(checkpoints::evl_tokenizer_path(out + "/model.evl"));
  };
  return drive<float>(c, dir, request, {trainable, text.data(), save}, std::move(state));
}

}  // namespace tinylm::train
