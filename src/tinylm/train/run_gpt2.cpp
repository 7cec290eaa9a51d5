// GPT-2's part of a training run: the vocabulary (run_tokenizer.h), a fresh model in the shape
// the flags give (or Hugging Face weights), and checkpoints as Hugging Face directories with
// tokenizer.json beside the weights, so `tinylm generate` and transformers' loaders read them
// as they are.
#include <memory>

#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/generate/generate.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/models/gpt2/init.h"
#include "tinylm/models/gpt2/model.h"
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/replicas.h"
#include "tinylm/train/run_session.h"
#include "tinylm/train/run_tokenizer.h"

namespace tinylm::train {

RunSummary run_gpt2(const RunConfig& c, RunDir& dir, const RunRequest& request,
                    const std::optional<Checkpoint>& resume) {
  std::optional<TrainState<float>> state = resume_state<float>(c, resume, request.log);
  // The vocabulary: made from the data (char, byte, bpe:N) or given (the CLI defaults it to
  // the bundled GPT-2 one); the text tokenized with it.
  RunText text(c, dir, request, resume.has_value());
  const BpeTokenizer& tok = text.tokenizer();

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
    config = gpt2_config(c, tok.vocab_size());
    params = gpt2::init_params(config, c.seed);  // (biases zero, as --bias false keeps them)
  }
  check(c.seq_len <= config.n_positions, "--seq-len ", c.seq_len, " exceeds the model's ",
        config.n_positions, " positions");
  text.check_model_vocab(config.vocab_size);

  // One replica per device, each planned for its shard of the batch.
  const gpt2::TrainerOptions per_shard{static_cast<int>(shard_rows(c)), static_cast<int>(c.seq_len),
                                       static_cast<float>(c.dropout), parse_dtype(c.compute),
                                       c.bias};
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
  std::fprintf(request.log, "gpt2: %zu parameters (%d layers, %d heads, width %d%s), %s\n",
               model.params().size(), config.n_layer, config.n_head, config.n_embd,
               c.bias ? "" : ", biases held at zero", text.token_counts().c_str());
  const auto save = [&](const std::string& out) {
    checkpoints::save_gpt2(out, config, model.params());
    text.save_tokenizer(out + "/tokenizer.json");
  };
  // As nanoGPT's sample.py: from a newline, temperature 0.8, top-k 200, the context sliding
  // past its end; 200 new tokens.
  const auto sample = [&](uint64_t seed) {
    gpt2::Model decoder(config, std::vector<float>(model.params().begin(), model.params().end()),
                        DType::f32);
    const std::unique_ptr<generate::DecodeBackend> backend = generate::gpt2_backend(decoder);
    generate::GenerateOptions options;
    options.max_tokens = 200;
    options.slide = true;
    options.sampling.temperature = 0.8;
    options.sampling.top_k = 200;
    options.sampling.seed = seed;
    options.eos_id = tok.eot_id().value_or(-1);
    std::vector<int> prompt = {0};  // (a vocabulary without a newline starts from token 0)
    try {
      prompt = tok.encode("\n");
    } catch (const Error&) {
    }
    std::string out = tok.decode(prompt);  // (appended to: GCC 12 warns on "\n" + string)
    out += generate::generate_text(*backend, tok, prompt, options).text;
    return out;
  };
  return drive<float>(c, dir, request, {model, text.data(), save, sample}, std::move(state));
}

}  // namespace tinylm::train
