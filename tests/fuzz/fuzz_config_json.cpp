// libFuzzer target: arbitrary bytes as a GPT-2 config.json, through
// checkpoints::read_gpt2_config_json. Rejection must be a tinylm::Error; anything else crashes so
// the fuzzer reports it. A config that loads passes validate() (sizes within the ceilings) and
// survives a round trip through write_gpt2_config_json.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_scratch.h"
#include "tinylm/checkpoints/gpt2_config_json.h"
#include "tinylm/core/error.h"

namespace {

using tinylm::fuzz::require;

const std::string& in_path() {
  static const std::string* const p = [] {
    std::string* s = tinylm::fuzz::scratch_path("config", "json");
    std::atexit([] { std::remove(in_path().c_str()); });
    return s;
  }();
  return *p;
}

const std::string& out_path() {
  static const std::string* const p = [] {
    std::string* s = tinylm::fuzz::scratch_path("config-out", "json");
    std::atexit([] { std::remove(out_path().c_str()); });
    return s;
  }();
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tinylm::fuzz::write_scratch(in_path(), data, size);
  tinylm::gpt2::Config c;
  try {
    c = tinylm::checkpoints::read_gpt2_config_json(in_path());
  } catch (const tinylm::Error&) {
    return 0;  // a rejected file: the expected outcome for most inputs
  }
  c.validate();  // a loaded config is a valid one: throwing here crashes
  tinylm::checkpoints::write_gpt2_config_json(out_path(), c);
  const tinylm::gpt2::Config back = tinylm::checkpoints::read_gpt2_config_json(out_path());
  require(back.vocab_size == c.vocab_size && back.n_positions == c.n_positions &&
          back.n_embd == c.n_embd && back.n_layer == c.n_layer && back.n_head == c.n_head &&
          back.n_inner == c.n_inner && back.layer_norm_epsilon == c.layer_norm_epsilon);
  return 0;
}
