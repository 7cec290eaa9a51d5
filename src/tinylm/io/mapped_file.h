#pragma once
// A read-only mapping of a whole regular file. Loaders read through a mapping rather than
// copying into a buffer: a fresh buffer costs a first-touch page fault per 4 KiB, which for a
// large checkpoint is more than the parsing, and tensors can then point into the file.
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tinylm::io {

class MappedFile {
 public:
  MappedFile() = default;  // empty: bytes() is an empty span
  // Throws Error("PATH: cannot open: ...", "PATH: not a regular file", "PATH: cannot map: ...").
  static MappedFile open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(map_), size_}; }

 private:
  void* map_ = nullptr;  // null when the file is empty
  size_t size_ = 0;
};

// A file's bytes for a reader: mapped (open), or a copy (copy: images in memory, for tests and
// fuzzing). Shared, so tensors used in place keep them alive.
struct FileBytes {
  MappedFile map;  // empty for a copy
  std::vector<std::byte> owned;
  static std::shared_ptr<FileBytes> open(const std::string& path);
  static std::shared_ptr<FileBytes> copy(std::span<const std::byte> bytes);
  bool mapped() const { return !map.bytes().empty(); }
  std::span<const std::byte> bytes() const { return mapped() ? map.bytes() : owned; }
};

// Faults in the pages under `bytes` (part of a mapping) now, so a later pass over them runs at
// memory speed: madvise(MADV_POPULATE_READ) where the kernel has it, else a read of a byte of
// every page.
void populate(std::span<const std::byte> bytes);

}  // namespace tinylm::io
