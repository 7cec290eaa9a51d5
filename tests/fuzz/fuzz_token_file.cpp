// libFuzzer target: arbitrary bytes as a token file (tokens.bin), through
// TokenFile::from_bytes. Each input runs twice: as given, and with its three CRCs recomputed
// from the header's own sizes, so that mutations reach the size, padding and metadata checks
// behind the checksums. Rejection must be a tinylm::Error; anything else crashes so the
// fuzzer reports it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/little_endian.h"
#include "tinylm/train/token_file.h"

namespace {

namespace train = tinylm::train;

void require(bool ok) {
  if (!ok) std::abort();
}

uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

bool same(const train::TokenFileMeta& a, const train::TokenFileMeta& b) {
  if (a.tokenizer != b.tokenizer || a.vocab_size != b.vocab_size || a.separator != b.separator ||
      a.sources.size() != b.sources.size())
    return false;
  for (size_t i = 0; i < a.sources.size(); ++i) {
    const train::TokenSource &x = a.sources[i], &y = b.sources[i];
    if (x.path != y.path || x.bytes != y.bytes || x.crc32 != y.crc32) return false;
  }
  return true;
}

void check_one(std::span<const std::byte> bytes) {
  std::vector<int32_t> ids;
  train::TokenFileMeta meta;
  try {
    const train::TokenFile f = train::TokenFile::from_bytes(bytes, "fuzz.bin");
    // A file that opens is exactly header + metadata + padding + its tokens.
    const uint64_t data_begin =
        (train::kTokenHeaderBytes + get_u64(bytes.data() + 24) + 63) / 64 * 64;
    require(f.size() >= 0 && (f.token_bytes() == 2 || f.token_bytes() == 4));
    require(bytes.size() == data_begin + static_cast<uint64_t>(f.size()) * f.token_bytes());
    try {
      f.copy(f.size(), 1, nullptr);
      std::abort();  // one past the end must be refused
    } catch (const tinylm::Error&) {
    }
    ids.resize(f.size());
    meta = f.meta();
    f.copy(0, f.size(), ids.data());  // throws when an id lies outside the vocabulary
  } catch (const tinylm::Error&) {
    return;
  }
  // Valid ids: writing the file back and reading it again gives the same tokens and metadata.
  const std::vector<std::byte> again = train::encode_token_file(meta, ids);
  const train::TokenFile back = train::TokenFile::from_bytes(again, "again");
  std::vector<int32_t> ids_back(back.size());
  back.copy(0, back.size(), ids_back.data());
  require(ids_back == ids && same(back.meta(), meta));
}

// The CRCs of metadata, tokens and header from the header's sizes, where they fit the input.
std::vector<std::byte> sealed(std::span<const std::byte> bytes) {
  std::vector<std::byte> f(bytes.begin(), bytes.end());
  const uint64_t meta = get_u64(f.data() + 24), room = f.size() - train::kTokenHeaderBytes;
  if (meta <= room) {
    tinylm::io::put_u32(f.data() + 36, tinylm::io::crc32(std::span(f).subspan(64, meta)));
    const uint64_t data = (64 + meta + 63) / 64 * 64;
    if (data <= f.size())
      tinylm::io::put_u32(f.data() + 32, tinylm::io::crc32(std::span(f).subspan(data)));
  }
  tinylm::io::put_u32(f.data() + 60, tinylm::io::crc32(std::span(f).first(60)));
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  check_one(bytes);
  if (size >= train::kTokenHeaderBytes) check_one(sealed(bytes));
  return 0;
}
