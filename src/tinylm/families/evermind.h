#pragma once
// EvermindLM's record (evermind.cpp) and where its tokenizer is saved, which `train
// --init-from` needs too.
#include <string>

#include "tinylm/families/family.h"

namespace tinylm::families {

extern const Family evermind_family;

// Where `tinylm train` writes the tokenizer of model.evl by default: model.tokenizer.json.
std::string default_evermind_tokenizer_path(const std::string& model_path);

}  // namespace tinylm::families
