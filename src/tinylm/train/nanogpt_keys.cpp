#include "tinylm/train/nanogpt_keys.h"

#include <algorithm>
#include <span>

namespace tinylm::train {

namespace {

struct Key {
  std::string_view key;   // as nanoGPT names it
  std::string_view flag;  // tinylm's flag for the same setting, or empty for none
  std::string_view note;  // what else a nanoGPT user needs to know, or empty
};

constexpr std::string_view kNoWandb = "every run writes RUN/metrics.jsonl, which tinylm plot draws";

// train.py's keys (karpathy/nanoGPT), but those whose flag here has their name (dropout, bias,
// beta1, beta2, device). A config file takes n_layer for n-layer, so the shape's four come up
// only on the command line.
constexpr Key kTrainKeys[] = {
    {"batch_size", "batch", ""},
    {"block_size", "block-size", ""},
    {"n_layer", "n-layer", ""},
    {"n_head", "n-head", ""},
    {"n_embd", "n-embd", ""},
    {"learning_rate", "lr", ""},
    {"min_lr", "min-lr", ""},
    {"weight_decay", "weight-decay", ""},
    {"grad_clip", "clip", ""},
    {"warmup_iters", "warmup", ""},
    {"max_iters", "steps", "nanoGPT's loop makes one update more, after its last evaluation"},
    {"lr_decay_iters", "",
     "the schedule decays over --steps, as nanoGPT's recipes set it to max_iters"},
    {"decay_lr", "schedule", "decay_lr=False is --schedule constant"},
    {"eval_interval", "eval-every", ""},
    {"eval_iters", "eval-batches", ""},
    {"log_interval", "log-every", ""},
    {"gradient_accumulation_steps", "accum", ""},
    {"out_dir", "out", "--resume DIR continues the run there"},
    {"init_from", "init-from",
     "init_from='resume' is --resume DIR, 'gpt2' is --init-from hf:openai-community/gpt2"},
    {"dataset", "data",
     "a text file or a directory of them; --tokenizer char makes shakespeare_char's vocabulary"},
    {"always_save_checkpoint", "save-every", "a checkpoint every N steps, --keep the last K"},
    {"dtype", "compute-dtype", "f32, bf16 or f16"},
    {"eval_only", "", "tinylm perplexity scores a model on a text"},
    {"compile", "", "tinylm's kernels are compiled ahead of time"},
    {"wandb_log", "", kNoWandb},
    {"wandb_project", "", kNoWandb},
    {"wandb_run_name", "", kNoWandb},
    {"backend", "", "--devices splits each batch over replicas, and mpirun runs them as processes"},
};

// sample.py's, but temperature, seed, device and dtype.
constexpr Key kSampleKeys[] = {
    {"num_samples", "samples", ""},
    {"max_new_tokens", "max-tokens", ""},
    {"top_k", "top-k", ""},
    {"start", "prompt", "start='FILE:name' is --prompt-file name"},
    {"out_dir", "model", "a run directory, or one of its checkpoints"},
    {"init_from", "model", "init_from='gpt2' is --model hf:openai-community/gpt2"},
    {"compile", "", "tinylm's kernels are compiled ahead of time"},
};

}  // namespace

std::string nanogpt_hint(NanoGptScript script, std::string_view key, std::string_view dashes) {
  std::string k(key);
  std::replace(k.begin(), k.end(), '-', '_');
  const std::span<const Key> keys =
      script == NanoGptScript::train ? std::span<const Key>(kTrainKeys) : kSampleKeys;
  const auto it = std::find_if(keys.begin(), keys.end(), [&](const Key& e) { return e.key == k; });
  if (it == keys.end()) return "";
  std::string hint = "nanoGPT's " + k;
  if (it->flag.empty()) return hint + " has no counterpart here: " + std::string(it->note);
  hint += " is " + std::string(dashes) + std::string(it->flag) + " here";
  if (!it->note.empty()) hint += " (" + std::string(it->note) + ")";
  return hint;
}

}  // namespace tinylm::train
