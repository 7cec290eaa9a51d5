#pragma once
// The whole configuration of a training run: every `tinylm train` flag, kept in RUN/run.json
// and in each checkpoint's training state. Fields are listed once, in visit(), which drives
// the command line, the JSON and the resume check: a field marked `fixed` defines the run
// (shape, data, optimizer, seed) and may not change on --resume; a `cadence` field (steps,
// evaluation and checkpoint cadence, threads, logging) may.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/models/gpt2/config.h"

namespace tinylm::train {

class TrainFamilies;  // family.h

enum class FieldKind : uint8_t { fixed, cadence };

struct RunConfig {
  // What is trained, on what, from where.
  std::string arch;               // gpt2 | evermind | microgpt
  std::vector<std::string> data;  // text files or directories
  std::string init_from;          // weights to start from (family format); empty: fresh
  std::string tokenizer;          // GPT-2 vocabulary dir or tokenizer.json; EvermindLM's BPE
  // Model shape (fresh models; --init-from brings its own).
  std::string preset = "mini";  // gpt2: 124M, baby, mini, small-test (its fields' defaults)
  int64_t n_layer = 2, n_head = 4, n_embd = 16, block_size = 16;  // gpt2, microgpt
  bool bias = true;  // gpt2: false holds the biases at zero (nanoGPT's bias=False)
  int64_t d_model = 64, conv_kernel = 3, hidden_dim = 0, n_experts = 4, top_k = 2;  // evermind
  int64_t vocab_size = 4096;  // evermind: the BPE trained on the data
  // Data.
  double val_fraction = 0.1;
  int64_t batch = 4, seq_len = 256, accum = 1;
  int64_t devices = 1;           // shards each micro-batch is split into (train/replicas.h)
  std::string device = "cpu";    // cpu | gpu | gpu:N: where gpt2's forward and backward run
  std::string order = "random";  // random | sequential
  uint64_t seed = 0;
  // Optimization.
  std::string optimizer = "adamw";  // adamw | sgd
  double lr = 6e-4, min_lr = 6e-5;
  int64_t warmup = 100;
  std::string schedule = "cosine";  // cosine | linear | constant
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  std::string decay = "matrices";  // matrices | embeddings | all
  double clip = 1.0;
  std::string compute = "f32";                                   // gpt2: f32 | bf16 | f16
  double dropout = 0.0;                                          // gpt2
  double aux_loss_coef = 0.01;                                   // evermind
  bool mixed_precision = false, checkpoint_activations = false;  // evermind
  // Cadence.
  int64_t steps = 1000, eval_every = 100, eval_batches = 10, save_every = 500, keep = 2;
  int64_t max_bad_steps = 10, log_every = 1;
  int64_t sample_every = 0;  // gpt2: a short sample on the log every N steps (0: never)
  int64_t threads = 0;
  std::string overlap = "auto";  // auto | on | off: the gradient exchange during the backward

  // fn(name, member, kind): every field, in this order. `name` is the flag without "--",
  // with dashes ("val-fraction").
  template <class Self, class Fn>
  static void visit(Self& c, Fn&& fn) {
    const FieldKind F = FieldKind::fixed, C = FieldKind::cadence;
    fn("arch", c.arch, F);
    fn("data", c.data, F);
    fn("init-from", c.init_from, F);
    fn("tokenizer", c.tokenizer, F);
    fn("preset", c.preset, F);
    fn("n-layer", c.n_layer, F);
    fn("n-head", c.n_head, F);
    fn("n-embd", c.n_embd, F);
    fn("block-size", c.block_size, F);
    fn("bias", c.bias, F);
    fn("d-model", c.d_model, F);
    fn("conv-kernel", c.conv_kernel, F);
    fn("hidden-dim", c.hidden_dim, F);
    fn("experts", c.n_experts, F);
    fn("top-k", c.top_k, F);
    fn("vocab-size", c.vocab_size, F);
    fn("val-fraction", c.val_fraction, F);
    fn("batch", c.batch, F);
    fn("seq-len", c.seq_len, F);
    fn("accum", c.accum, F);
    fn("devices", c.devices, C);  // may change on resume if processes x devices stays
    fn("device", c.device, C);    // a run may resume elsewhere (the bits are the device's)
    fn("order", c.order, F);
    fn("seed", c.seed, F);
    fn("optimizer", c.optimizer, F);
    fn("lr", c.lr, F);
    fn("min-lr", c.min_lr, F);
    fn("warmup", c.warmup, F);
    fn("schedule", c.schedule, F);
    fn("beta1", c.beta1, F);
    fn("beta2", c.beta2, F);
    fn("eps", c.eps, F);
    fn("weight-decay", c.weight_decay, F);
    fn("decay", c.decay, F);
    fn("clip", c.clip, F);
    fn("compute-dtype", c.compute, F);
    fn("dropout", c.dropout, F);
    fn("aux-loss-coef", c.aux_loss_coef, F);
    fn("mixed-precision", c.mixed_precision, F);
    fn("checkpoint-activations", c.checkpoint_activations, F);
    fn("steps", c.steps, C);
    fn("eval-every", c.eval_every, C);
    fn("eval-batches", c.eval_batches, F);
    fn("save-every", c.save_every, C);
    fn("keep", c.keep, C);
    fn("max-bad-steps", c.max_bad_steps, C);
    fn("log-every", c.log_every, C);
    fn("sample-every", c.sample_every, C);
    fn("threads", c.threads, C);
    fn("overlap", c.overlap, C);
  }
};

// The defaults of an architecture (its TrainFamily's, family.h): GPT-2's as above;
// EvermindLM's (lr 1e-3, seq_len 128, batch 8, ...) and microgpt's (microgpt.py's settings: one
// document per step, lr 0.01 decaying linearly to 0, betas 0.85/0.99, no weight decay or
// clipping, 1000 steps, seed 42). An unknown one is a FlagError naming the accepted ones.
RunConfig defaults_for(const TrainFamilies& families, const std::string& arch);

nlohmann::ordered_json to_json(const RunConfig& c);
// Fields absent from j keep c's values; an unknown key or a value of the wrong type is an
// Error naming `source` and the key.
void merge_json(RunConfig& c, const nlohmann::ordered_json& j, const std::string& source);

// Checks a resumed run's stored configuration against the flags given now (`given`: the
// given flags as JSON); a fixed field that differs is a FlagError naming the flag.
void check_resume_flags(const RunConfig& stored, const nlohmann::ordered_json& given);

// Ceilings on the sizes a run allocates from (docs/limits.md).
struct RunLimits {
  static constexpr int64_t seq_len = int64_t{1} << 20;
  static constexpr int64_t rows = int64_t{1} << 16;          // --batch, --accum, --devices
  static constexpr int64_t batch_tokens = int64_t{1} << 24;  // --batch x --seq-len
};

// A flag's value or a combination of flags is wrong: the command line's fault (the CLI's usage
// error), found before anything is written.
class FlagError : public Error {
 public:
  using Error::Error;
};

// Checks every value and combination for the architecture (one-line FlagErrors naming the
// flag): ranges, the named choices, the optimizer's numbers, the options only some families
// take, a fresh model's shape (its family's check: a gpt2 preset's positions against
// --seq-len, EvermindLM's shape within this machine's memory), validate_sizes() included.
// Reads no file. `families`: those --arch may name (family.h).
void validate(const TrainFamilies& families, const RunConfig& c);

// The sizes: sequence and batch ceilings (a fresh model's shape is its family's check,
// family.h), so a bad size is refused before a tokenizer is trained or a file written.
void validate_sizes(const RunConfig& c);

// --compute-dtype's value: f32, bf16 or f16; an Error naming the flag otherwise.
DType parse_compute_dtype(const std::string& name);

// A fresh GPT-2's shape from the run's flags (--block-size positions), for `vocab` tokens.
gpt2::Config gpt2_config(const RunConfig& c, int vocab);

// A fresh EvermindLM's shape and seed from the run's flags, for a vocabulary of `vocab` tokens.
evermind::Config evermind_config(const RunConfig& c, int64_t vocab);

}  // namespace tinylm::train
