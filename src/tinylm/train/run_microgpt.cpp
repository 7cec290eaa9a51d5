// microgpt's part of a training run, as microgpt.py sets it up: the documents of the data
// files (one per line), shuffled by Python's RNG seeded with --seed, a character vocabulary,
// weights drawn from the same RNG; the last --val-fraction of the shuffled documents held
// out. microgpt's data is a list of short documents rather than a token stream, so it is
// read directly instead of through tokens.bin. Checkpoints are microgpt safetensors.
#include "tinylm/checkpoints/microgpt_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/py_random.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/char_tokenizer.h"
#include "tinylm/train/document_data.h"
#include "tinylm/train/microgpt_trainable.h"
#include "tinylm/train/run_session.h"

namespace tinylm::train {

RunSummary run_microgpt(const RunConfig& c, RunDir& dir, const RunRequest& request,
                        const std::optional<Checkpoint>& resume) {
  std::optional<TrainState<double>> state = resume_state<double>(c, resume, request.log);
  std::vector<io::Documents> files;
  std::vector<std::string_view> docs;
  for (const std::string& f : data_files(c)) {
    files.push_back(io::read_documents(f));
    const std::span<const std::string_view> v = files.back().views();
    docs.insert(docs.end(), v.begin(), v.end());
  }
  PyRandom rng(c.seed);
  rng.shuffle(std::span<std::string_view>(docs));
  const CharTokenizer tokenizer = CharTokenizer::from_documents(docs);

  microgpt::Config config;
  config.n_layer = static_cast<int>(c.n_layer);
  config.n_embd = static_cast<int>(c.n_embd);
  config.n_head = static_cast<int>(c.n_head);
  config.block_size = static_cast<int>(c.block_size);
  config.vocab_size = tokenizer.vocab_size();
  config.validate();
  const std::unique_ptr<microgpt::Model> model =
      microgpt::make_model(config, microgpt::Engine::tensor);
  for (double& p : model->params()) p = rng.gauss(0.0, 0.08);  // microgpt.py's init
  const std::string from = resume ? resume->path + "/model.safetensors" : c.init_from;
  if (!from.empty()) {
    const checkpoints::MicrogptCheckpoint ck = checkpoints::load_microgpt(from);
    const microgpt::Config& k = ck.config;
    check(k.n_embd == config.n_embd && k.n_head == config.n_head && k.n_layer == config.n_layer &&
              k.block_size == config.block_size,
          from, ": model shape (n_embd ", k.n_embd, ", n_head ", k.n_head, ", n_layer ", k.n_layer,
          ", block_size ", k.block_size, ") differs from the run's");
    check(ck.chars == tokenizer.chars_utf8(), from, ": its character set differs from the data's");
    std::copy(ck.params.begin(), ck.params.end(), model->params().begin());
  }

  const int64_t n_val = static_cast<int64_t>(static_cast<double>(docs.size()) * c.val_fraction);
  DocumentData data(docs, tokenizer, n_val, c.eval_batches);
  MicrogptTrainable trainable(*model);
  std::fprintf(
      request.log, "microgpt: %zu parameters, %zu documents (%lld held out), vocabulary of %d\n",
      model->params().size(), docs.size(), static_cast<long long>(n_val), config.vocab_size);
  const auto save = [&](const std::string& out) {
    checkpoints::save_microgpt(out + "/model.safetensors", *model, tokenizer,
                               static_cast<int64_t>(docs.size()));
  };
  return drive<double>(c, dir, request, {trainable, data, save}, std::move(state));
}

}  // namespace tinylm::train
