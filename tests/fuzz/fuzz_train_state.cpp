// libFuzzer target: arbitrary bytes as a train_state.bin, through decode_train_state<float>
// and <double>. Each input runs twice: as given, and with its last 4 bytes replaced by a
// correct CRC, so that mutations reach the JSON and field checks behind the checksum.
// Rejection must be a tinylm::Error; anything else crashes so the fuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/io/crc32.h"
#include "tinylm/train/train_state.h"

namespace {

namespace train = tinylm::train;

void require(bool ok) {
  if (!ok) std::abort();
}

template <class T>  // NaN payloads included, so not ==
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void check_one(std::span<const std::byte> bytes) {
  train::TrainState<T> s;
  try {
    s = train::decode_train_state<T>(bytes, "fuzz.bin");
  } catch (const tinylm::Error&) {
    return;  // a rejected file: the expected outcome for most inputs
  }
  // A state that loads writes back (the JSON may be spelled differently from the input's),
  // and what it writes is a fixed point: it loads and writes back the same bytes.
  require(s.m.size() == s.v.size());
  const std::vector<std::byte> again = train::encode_train_state(s);
  const train::TrainState<T> back = train::decode_train_state<T>(again, "again");
  require(train::encode_train_state(back) == again);
  require(same_bits(back.m, s.m) && same_bits(back.v, s.v));
}

void check_both(std::span<const std::byte> bytes) {
  check_one<float>(bytes);
  check_one<double>(bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  check_both(bytes);
  if (size >= 4) {
    std::vector<std::byte> sealed(bytes.begin(), bytes.end());
    const uint32_t crc = tinylm::io::crc32(bytes.first(size - 4));
    for (int i = 0; i < 4; ++i) sealed[size - 4 + i] = static_cast<std::byte>(crc >> (8 * i));
    check_both(sealed);
  }
  return 0;
}
