#pragma once
// CRC-32 (io/crc32.h) of large buffers and files, fast enough for checkpoints: pieces are
// checksummed on separate threads and combined in order, since one thread's CRC (about 1 GB/s
// here) would take as long as writing or reading a 124M model's weights and moments.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tinylm::io {

// The CRC of bytes continued from crc (as io::crc32).
uint32_t crc32_parallel(std::span<const std::byte> bytes, uint32_t crc = 0);

// The CRC of a regular file's bytes (memory-mapped); Error naming the path when it cannot be
// read.
uint32_t file_crc32(const std::string& path);

}  // namespace tinylm::io
