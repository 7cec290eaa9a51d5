#pragma once
// A training run's settings from a file, `tinylm train --config FILE`, as nanoGPT's users keep
// theirs: TOML (FILE.toml) or JSON (FILE.json), one top-level key per `train` flag, named
// without the dashes in front ("n-layer = 4"; "n_layer", as nanoGPT's Python configs spell it,
// is the same key). The result is the same JSON object the command line's flags make, so
// merge_json (run_config.h) checks the names and types of both alike.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tinylm::train {

// A config file is a page of settings; anything larger is the wrong file (docs/limits.md's
// reasoning: a one-line refusal rather than a long read).
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{1} << 20;

enum class ConfigFormat : uint8_t { toml, json };

// The format a config file's extension names (.toml or .json); an Error naming the file for
// any other.
ConfigFormat config_format(const std::string& path);

// The settings in a config file's text: a JSON object keyed by dashed flag name ("n-layer"),
// each value of its file's type (a TOML integer as nlohmann's parser reads a JSON one: unsigned
// when >= 0, so `seed` takes it). Checked for shape only: one top-level table or object of
// strings, numbers, booleans and arrays of them, no nested table, date or time, no setting
// named twice (once with dashes, once with underscores), and none of the flags that only the
// command line takes (out, resume, config, peak-gflops). A key that is no setting keeps its
// spelling: merge_json names it. Errors are one line starting with `source`.
nlohmann::ordered_json parse_config(std::string_view text, ConfigFormat format,
                                    const std::string& source);

// parse_config of the file at `path`, which is read under io::read_file's rules with a limit
// of kMaxConfigFileBytes (devices, directories and larger files are refused). Errors name it.
nlohmann::ordered_json read_config_file(const std::string& path);

}  // namespace tinylm::train
