#pragma once
// A trained microgpt as safetensors: one F64 tensor per parameter (microgpt.py's names and
// [out][in] shapes), the configuration and character set in __metadata__.
#include <cstdint>
#include <optional>
#include <string>

#include "tinylm/models/microgpt/model.h"
#include "tinylm/tokenizers/char_tokenizer.h"

namespace tinylm::checkpoints {

// `documents`: how many documents the run shuffled before drawing its initial weights (its
// data's), which `tinylm generate` replays to sample as `tinylm microgpt --load` does.
void save_microgpt(const std::string& path, const microgpt::Model& model,
                   const CharTokenizer& tokenizer, std::optional<int64_t> documents = {});

struct MicrogptCheckpoint {
  microgpt::Config config;
  std::string chars;                 // the tokenizer's character set, UTF-8
  std::vector<double> params;        // flat, canonical order
  std::optional<int64_t> documents;  // absent in files written before it was recorded
};
// Throws Error naming the file on any problem (format, metadata, missing or mis-shaped tensor).
MicrogptCheckpoint load_microgpt(const std::string& path);

}  // namespace tinylm::checkpoints
