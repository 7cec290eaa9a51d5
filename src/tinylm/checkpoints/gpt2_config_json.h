#pragma once
// GPT-2's config.json, the Hugging Face file that sits beside the weights.
#include <string>

#include "tinylm/models/gpt2/config.h"

namespace tinylm::checkpoints {

// Reads a Hugging Face config.json (n_positions or the older n_ctx; n_inner null or a size;
// activation_function must be the tanh GELU: "gelu_new" or "gelu_pytorch_tanh").
gpt2::Config read_gpt2_config_json(const std::string& path);
// Writes config.json in the Hugging Face layout, atomically.
void write_gpt2_config_json(const std::string& path, const gpt2::Config& config);

}  // namespace tinylm::checkpoints
