#pragma once
// CRC-32 as zlib, gzip and PNG compute it (reflected polynomial 0xEDB88320, initial value and
// final XOR 0xFFFFFFFF): a thin wrapper over zlib's crc32, so checkpoints written here can
// be checked with any zlib binding (Python's zlib.crc32, for one).
#include <cstddef>
#include <cstdint>
#include <span>

namespace tinylm::io {

// The CRC-32 of bytes. Pass the CRC of earlier bytes as `crc` to continue over more:
// crc32(b, crc32(a)) == crc32(a followed by b). crc32({}) == 0.
uint32_t crc32(std::span<const std::byte> bytes, uint32_t crc = 0);

}  // namespace tinylm::io
