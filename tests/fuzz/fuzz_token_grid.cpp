// libFuzzer target: arbitrary bytes as the tokens JSON of `train-gpt2 --tokens`
// ({"ids": [[...], ...]}), through train::load_token_grid at the protocol's 4 x 65 grid and
// at a small one. Rejection must be a tinylm::Error; a grid that loads has exactly rows x cols
// ids, each inside the vocabulary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_scratch.h"
#include "tinylm/core/error.h"
#include "tinylm/train/gpt2_metrics.h"

namespace {

const std::string& path() {
  static const std::string* const p = [] {
    std::string* s = tinylm::fuzz::scratch_path("tokens", "json");
    std::atexit([] { std::remove(path().c_str()); });
    return s;
  }();
  return *p;
}

void check_grid(int64_t rows, int64_t cols, int64_t vocab) {
  try {
    const std::vector<int32_t> ids = tinylm::train::load_token_grid(path(), rows, cols, vocab);
    tinylm::fuzz::require(static_cast<int64_t>(ids.size()) == rows * cols);
    for (const int32_t id : ids) tinylm::fuzz::require(id >= 0 && id < vocab);
  } catch (const tinylm::Error&) {
    // A rejected grid: the expected outcome for most inputs.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tinylm::fuzz::write_scratch(path(), data, size);
  check_grid(4, 65, 50257);
  check_grid(2, 3, 10);
  return 0;
}
