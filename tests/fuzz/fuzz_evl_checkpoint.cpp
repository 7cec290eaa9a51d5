// libFuzzer target: arbitrary bytes as an EVL0 EvermindLM checkpoint, through decode_evl and
// decode_evl_header (read_evl_header's checks). Each input runs twice: as given, and with its
// last 8 bytes replaced by a correct CRC trailer, so that mutations reach the checks behind
// the CRC. Rejection must be a tinylm::Error; anything else crashes so the fuzzer reports it.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"

namespace {

namespace checkpoints = tinylm::checkpoints;

void require(bool ok) {
  if (!ok) std::abort();
}

void check_one(std::span<const std::byte> bytes) {
  checkpoints::EvlCheckpoint ck;
  try {
    ck = checkpoints::decode_evl(bytes, "fuzz.evl");
  } catch (const tinylm::Error&) {
    return;  // a rejected file: the expected outcome for most inputs
  }
  // A checkpoint that loads is self-consistent, and writing it back gives the same file
  // (f16: the same values; a NaN may come back quieted).
  require(ck.params.size() == tinylm::evermind::param_layout(ck.config).size());
  require(bytes.size() == checkpoints::evl_file_bytes(ck.config, ck.precision));
  const std::vector<std::byte> again = checkpoints::encode_evl(ck.config, ck.params, ck.precision);
  if (ck.precision == checkpoints::EvlPrecision::f32) {
    require(again.size() == bytes.size() &&
            std::memcmp(again.data(), bytes.data(), again.size()) == 0);
  } else {
    const checkpoints::EvlCheckpoint back = checkpoints::decode_evl(again, "again");
    for (size_t i = 0; i < ck.params.size(); ++i) {
      const float a = ck.params[i], b = back.params[i];
      require(tinylm::float_bits(a) == tinylm::float_bits(b) || (std::isnan(a) && std::isnan(b)));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  check_one(bytes);

  try {
    const checkpoints::EvlHeader h = checkpoints::decode_evl_header(
        bytes.first(std::min(size, checkpoints::kEvlHeaderBytes)), size, "fuzz.evl");
    require(h.file_bytes == size &&
            h.file_bytes == checkpoints::evl_file_bytes(h.config, h.precision));
  } catch (const tinylm::Error&) {
  }

  if (size >= checkpoints::kEvlTrailerBytes) {
    std::vector<std::byte> sealed(bytes.begin(), bytes.end() - checkpoints::kEvlTrailerBytes);
    checkpoints::append_evl_trailer(sealed);
    check_one(sealed);
  }
  return 0;
}
