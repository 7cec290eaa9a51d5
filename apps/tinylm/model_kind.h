#pragma once
// The --model path of a command, as checkpoints::sniff reads it from the file, checked against
// what the command takes: commands need no --arch where the file says, and a wrong kind is one
// line: "X: this is an EvermindLM checkpoint (EVL0); generate expected GPT-2 ...".
#include <initializer_list>
#include <string>

#include "tinylm/checkpoints/sniff.h"

namespace tinylm::cli {

using ModelKind = checkpoints::Family;
using DetectedModel = checkpoints::Sniffed;

// The model `path` for a command that takes the kinds in `accepted` ("gpt2", "evermind"):
// --arch when given (the file must agree), else what the file says. Throws a one-line error
// naming what the file is and what the command expected.
DetectedModel resolve_model(const std::string& command, const std::string& path,
                            const std::string& arch, std::initializer_list<ModelKind> accepted);

}  // namespace tinylm::cli
