#include "tinylm/io/file_crc.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include "tinylm/core/parallel.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/mapped_file.h"

namespace tinylm::io {

uint32_t crc32_parallel(std::span<const std::byte> bytes, uint32_t crc) {
  constexpr size_t kPiece = size_t{32} << 20;
  const size_t pieces = (bytes.size() + kPiece - 1) / kPiece;
  std::vector<uint32_t> crcs(pieces);
  const auto piece = [&](size_t i) {
    return bytes.subspan(i * kPiece, std::min(kPiece, bytes.size() - i * kPiece));
  };
  parallel_for(0, static_cast<int64_t>(pieces), 1, [&](int64_t i) {
    crcs[static_cast<size_t>(i)] = crc32(piece(static_cast<size_t>(i)));
  });
  for (size_t i = 0; i < pieces; ++i)
    crc =
        static_cast<uint32_t>(::crc32_combine(crc, crcs[i], static_cast<z_off_t>(piece(i).size())));
  return crc;
}

uint32_t file_crc32(const std::string& path) {
  const io::MappedFile file = io::MappedFile::open(path);
  return crc32_parallel(file.bytes());
}

}  // namespace tinylm::io
