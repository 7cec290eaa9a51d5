// libFuzzer target: arbitrary bytes as a `tinylm train --config` file, read as TOML and as
// JSON through train::parse_config, then merged into a run configuration as the CLI merges it.
// Rejection must be a tinylm::Error; anything else crashes so the fuzzer reports it. What reads
// has the reader's shape: a JSON object whose keys are no command-line-only flag, each value a
// string without NUL, a number, a boolean, null, or an array of those (no nested array or
// object); and a configuration that merges comes back the same through to_json.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_scratch.h"
#include "tinylm/core/error.h"
#include "tinylm/families/family.h"
#include "tinylm/train/config_file.h"
#include "tinylm/train/run_config.h"

namespace {

using json = nlohmann::ordered_json;
using tinylm::fuzz::require;

bool scalar(const json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().find('\0') == std::string::npos;
  return v.is_number() || v.is_boolean() || v.is_null();
}

void check_shape(const json& j) {
  require(j.is_object());
  for (const auto& [key, value] : j.items()) {
    require(key != "out" && key != "resume" && key != "config" && key != "peak-gflops");
    if (value.is_array()) {
      for (const json& e : value) require(scalar(e));
    } else {
      require(scalar(value));
    }
  }
}

void one(std::string_view text, tinylm::train::ConfigFormat format) {
  json j;
  try {
    j = tinylm::train::parse_config(text, format, "fuzz");
  } catch (const tinylm::Error&) {
    return;  // a rejected file: the expected outcome for most inputs
  }
  check_shape(j);
  tinylm::train::RunConfig c = tinylm::train::defaults_for(tinylm::families::trainable(), "gpt2");
  try {
    tinylm::train::merge_json(c, j, "fuzz");
  } catch (const tinylm::Error&) {
    return;  // an unknown key or a wrong type
  }
  // What merged is what the configuration now says. Skipped: a NaN (unequal to itself), and an
  // unsigned integer above int64_t's range, which merge_json reads into an int64_t setting
  // wrapped (the range check that follows, validate(), refuses the negative value).
  const json back = tinylm::train::to_json(c);
  for (const auto& [key, value] : j.items()) {
    if (value.is_number_float() && value.get<double>() != value.get<double>()) continue;
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}) continue;
    if (back[key].is_number_float() || value.is_number_float()) {
      require(back[key].get<double>() == value.get<double>());
    } else {
      require(back[key] == value);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  one(text, tinylm::train::ConfigFormat::toml);
  one(text, tinylm::train::ConfigFormat::json);
  return 0;
}
