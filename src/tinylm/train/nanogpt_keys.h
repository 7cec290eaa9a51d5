#pragma once
// nanoGPT's settings (the configuration keys of its train.py and sample.py, which its users
// give as --key=value or in a config file) that tinylm spells otherwise or does not have, so
// that an unknown flag or setting can say what to write instead. docs/training.md has the
// table for train.py.
#include <string>
#include <string_view>

namespace tinylm::train {

enum class NanoGptScript { train, sample };  // tinylm train's; tinylm generate's

// The hint for `script`'s `key` (with underscores, or dashes in their place): "nanoGPT's
// batch_size is --batch here", "nanoGPT's compile has no counterpart here: ..."; empty when
// the script has no such key or tinylm's flag has its name. `dashes` goes in front of the flag
// named: "--" for the command line, "" for a config file's keys.
std::string nanogpt_hint(NanoGptScript script, std::string_view key, std::string_view dashes);

// For a nanoGPT config (a .py file) given where tinylm wants a TOML or JSON one: that it is not
// read, and which of configs/ holds nanoGPT's recipe.
inline constexpr std::string_view kNanoGptConfigHint =
    "nanoGPT's Python configs are not read: configs/baby.toml is its "
    "config/train_shakespeare_char.py, configs/shakespeare_char.toml that with the CPU overrides "
    "of its README";

}  // namespace tinylm::train
