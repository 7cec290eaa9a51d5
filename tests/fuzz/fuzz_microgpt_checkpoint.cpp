// libFuzzer target: arbitrary bytes as a microgpt checkpoint file, through load_microgpt.
// Rejection must be a tinylm::Error; anything else crashes so the fuzzer reports it.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tinylm/checkpoints/microgpt_checkpoint.h"
#include "tinylm/core/error.h"

namespace {

// One file per process (parallel fuzzing jobs must not share it), removed at exit. The
// string is never destroyed, so the exit handler can still read it.
const std::string& scratch_path() {
  static const std::string* const path = [] {
    const auto* p =
        new std::string("/tmp/tinylm-fuzz-ckpt-" + std::to_string(::getpid()) + ".safetensors");
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return p;
  }();
  return *path;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size != 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  write_file(path, data, size);
  try {
    const tinylm::checkpoints::MicrogptCheckpoint ck = tinylm::checkpoints::load_microgpt(path);
    // A loaded checkpoint is self-consistent.
    if (ck.params.size() != tinylm::microgpt::param_layout(ck.config).size()) std::abort();
  } catch (const tinylm::Error&) {
    // A rejected file: the expected outcome for most inputs.
  }
  return 0;
}
