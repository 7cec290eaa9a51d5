#include "tinylm/io/crc32.h"

#include <zlib.h>

namespace tinylm::io {

uint32_t crc32(std::span<const std::byte> bytes, uint32_t crc) {
  // zlib returns its initial value 0 for a null buffer whatever crc is passed in.
  if (bytes.empty()) return crc;
  // crc32_z takes a size_t length (plain crc32 takes a 32-bit uInt).
  return static_cast<uint32_t>(
      ::crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

}  // namespace tinylm::io
