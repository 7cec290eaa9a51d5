#pragma once
// What the EvermindLM subcommands share: loading an EVL0 checkpoint into a model and finding
// the tokenizer saved next to it.
#include <string>

#include "tinylm/models/evermind/model.h"
#include "tinylm/tokenizers/bpe.h"

namespace tinylm::cli {

// Where `tinylm train` writes the tokenizer of model.evl by default: model.tokenizer.json.
std::string default_evermind_tokenizer_path(const std::string& model_path);

// The model in the checkpoint (config from its header), ready for sequences of up to
// max_seq_len tokens.
evermind::Model<float> load_evermind(const std::string& path, int64_t max_seq_len);

// --tokenizer when given (a tokenizer.json or a directory), else the checkpoint's default.
BpeTokenizer load_evermind_tokenizer(const std::string& explicit_path,
                                     const std::string& model_path);

}  // namespace tinylm::cli
