#pragma once
// GPT-2 checkpoints in the Hugging Face layout: a directory with config.json and
// model.safetensors (or a sharded model.safetensors.index.json), tensor names with or without
// the "transformer." prefix. The attention-mask buffers (attn.bias, attn.masked_bias) are not
// parameters and are skipped; lm_head.weight is used when present and different from wte.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tinylm/checkpoints/sniff.h"
#include "tinylm/models/gpt2/config.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::checkpoints {

struct Gpt2Checkpoint {
  gpt2::Config config;
  std::vector<float> params;   // f32, gpt2::param_layout(config) order
  std::vector<float> lm_head;  // [vocab, C] when the file holds an untied head; else empty
};

// `model` is a directory (config.json + weights), a .safetensors / .index.json file, or a GGUF
// file (checkpoints/gpt2_gguf.h: weights widened or dequantized to f32);
// `config_path` overrides where config.json is read from. Every missing or mis-shaped tensor
// is reported by name in one Error.
Gpt2Checkpoint load_gpt2(const std::string& model, const std::string& config_path = "");

// GPT-2's load entry for decoding: the model of a sniffed file (checkpoints/sniff.h) ready to
// run in `dtype`. A GGUF file goes to load_gpt2_gguf_model (without a dtype: the file's own
// type); any other is a Hugging Face directory or safetensors file (without a dtype: f32). An
// f32 model whose file already holds aligned F32 tensors uses them in place in the
// memory-mapped file (no copy, loads in milliseconds); otherwise the weights are read and
// converted once.
gpt2::Model load_gpt2_model(const Sniffed& file, const std::string& config_path,
                            std::optional<DType> dtype);
// The same for a path, sniffed here.
gpt2::Model load_gpt2_model(const std::string& model, const std::string& config_path, DType dtype);

// The configuration of the checkpoint load_gpt2 would read (a GGUF's metadata, else the
// config.json beside the weights), without reading the weights.
gpt2::Config read_gpt2_checkpoint_config(const std::string& model);

// Writes DIR/config.json and DIR/model.safetensors (F32, Hugging Face names without prefix,
// plus the h.{i}.attn.bias causal-mask buffers [1, 1, P, P], and lm_head.weight when an untied
// head [vocab, C] is given), atomically file by file.
void save_gpt2(const std::string& dir, const gpt2::Config& config, std::span<const float> params,
               std::span<const float> lm_head = {});

// About how many bytes save_gpt2 writes for `config` (F32 weights and the mask buffers), for
// checking the free space before the work.
uint64_t gpt2_saved_bytes(const gpt2::Config& config);

// Writes `params` (param_layout order) to `out` in the layout of the single safetensors file
// `source`: the same tensor names (prefixed or not), dtypes (F32/F16/BF16, rounded to nearest
// even), shapes, order and metadata; every other tensor (the attn.bias / masked_bias buffers)
// is copied through byte for byte, and a tied lm_head.weight receives wte. Atomic. An untied
// lm_head (different from wte in the source) is an error: training keeps the head tied.
void save_gpt2_weights_like(const std::string& source, const std::string& out,
                            const gpt2::Config& config, std::span<const float> params);

}  // namespace tinylm::checkpoints
