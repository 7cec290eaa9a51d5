// GPT-2's part of a training run: the byte-level BPE vocabulary, a fresh model from a preset
// (or Hugging Face weights), and checkpoints as Hugging Face directories with the vocabulary
// beside the weights, so `tinylm generate` and transformers' loaders read them as they are.
#include <filesystem>
#include <memory>

#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/text_file.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/models/gpt2/init.h"
#include "tinylm/tokenizers/bpe.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_session.h"

namespace tinylm::train {

namespace fs = std::filesystem;

namespace {

// The vocabulary files of a tokenizer directory under the names Hugging Face uses.
struct VocabFiles {
  fs::path vocab, merges;
};

VocabFiles vocab_files(const std::string& tokenizer) {
  const fs::path dir(tokenizer);
  check(fs::is_directory(dir), tokenizer,
        ": GPT-2 training needs a vocabulary directory (vocab.json + merges.txt, or "
        "encoder.json + vocab.bpe)");
  if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt"))
    return {dir / "vocab.json", dir / "merges.txt"};
  check(fs::exists(dir / "encoder.json") && fs::exists(dir / "vocab.bpe"), tokenizer,
        ": no vocab.json + merges.txt or encoder.json + vocab.bpe");
  return {dir / "encoder.json", dir / "vocab.bpe"};
}

// Names the vocabulary by its content, so the token cache notices a different one.
std::string vocab_identity(const VocabFiles& v) {
  const std::string vocab = io::read_file(v.vocab.string()),
                    merges = io::read_file(v.merges.string());
  return "gpt2-bpe:" + std::to_string(io::crc32(std::as_bytes(std::span(vocab)))) + ":" +
         std::to_string(io::crc32(std::as_bytes(std::span(merges))));
}

}  // namespace

RunSummary run_gpt2(const RunConfig& c, RunDir& dir, const RunRequest& request,
                    const std::optional<Checkpoint>& resume) {
  std::optional<TrainState<float>> state = resume_state<float>(c, resume, request.log);
  // The tokenizer: the given vocabulary directory (the CLI defaults it to the bundled one).
  const VocabFiles vocab = vocab_files(c.tokenizer);
  const BpeTokenizer tok = BpeTokenizer::from_directory(c.tokenizer);

  // The model: the checkpoint being resumed, the weights to start from, or a fresh preset.
  gpt2::Config config;
  std::vector<float> params;
  const std::string from = resume ? resume->path : c.init_from;
  if (!from.empty()) {
    checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(from);
    check(ck.lm_head.empty(), from,
          ": lm_head.weight differs from wte; training keeps the head tied");
    config = ck.config;
    params = std::move(ck.params);
  } else {
    config = gpt2::preset(c.preset);
    config.vocab_size = tok.vocab_size();
    params = gpt2::init_params(config, c.seed);
  }
  check(c.seq_len <= config.n_positions, "--seq-len ", c.seq_len, " exceeds the model's ",
        config.n_positions, " positions");
  check(tok.vocab_size() <= config.vocab_size, c.tokenizer, ": ", tok.vocab_size(),
        " tokens, more than the model's vocabulary of ", config.vocab_size);

  const TokenizerIdentity identity{vocab_identity(vocab), tok.vocab_size(), tok.eot_id()};
  TextData text(
      c, dir, identity, [&](std::string_view t) { return tok.encode(t, true); }, request.log);

  // One replica per device, each planned for its shard of the batch.
  const gpt2::TrainerOptions per_shard{static_cast<int>(shard_rows(c)), static_cast<int>(c.seq_len),
                                       static_cast<float>(c.dropout), parse_dtype(c.compute)};
  std::shared_ptr<kernels::vulkan::Context> gpu;
  if (const int index = kernels::vulkan::parse_device(c.device); index >= 0) {
    gpu = kernels::vulkan::open_gpu(index);
    // With --devices 1 the optimizer runs there too (train/trainable.h: optimizer_on_device).
    std::fprintf(request.log, "gpt2: forward, backward%s on %s\n",
                 c.devices == 1 ? " and the optimizer" : "",
                 kernels::vulkan::device_name(*gpu).c_str());
  }
  Replicas<float> model(gpt2_replicas(config, std::move(params), per_shard, c.devices, gpu),
                        overlap_exchange(c));
  std::fprintf(request.log,
               "gpt2: %zu parameters (%d layers, %d heads, width %d), %lld training and %lld "
               "validation tokens%s\n",
               model.params().size(), config.n_layer, config.n_head, config.n_embd,
               static_cast<long long>(text.sampler.split().n_train),
               static_cast<long long>(text.sampler.split().n_val),
               text.tokens.reused ? " (tokens.bin reused)" : "");
  const auto save = [&](const std::string& out) {
    checkpoints::save_gpt2(out, config, model.params());
    fs::copy_file(vocab.vocab, fs::path(out) / "vocab.json");
    fs::copy_file(vocab.merges, fs::path(out) / "merges.txt");
  };
  return drive<float>(c, dir, request, {model, text.data, save}, std::move(state));
}

}  // namespace tinylm::train
