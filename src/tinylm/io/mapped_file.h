#pragma once
// A read-only mapping of a whole regular file. Loaders read through a mapping rather than
// copying into a buffer: a fresh buffer costs a first-touch page fault per 4 KiB, which for a
// large checkpoint is more than the parsing, and tensors can then point into the file.
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
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
// fuzzing), with the name its errors give (the path, or the name given for a copy). Shared, so
// tensors used in place keep them alive.
struct FileBytes {
  std::string name;
  MappedFile map;  // empty for a copy
  std::vector<std::byte> owned;
  static std::shared_ptr<FileBytes> open(const std::string& path);
  static std::shared_ptr<FileBytes> copy(std::span<const std::byte> bytes, const std::string& name);
  bool mapped() const { return !map.bytes().empty(); }
  std::span<const std::byte> bytes() const { return mapped() ? map.bytes() : owned; }
  // `part` of these bytes made writable for this process alone: the mapping is private, so a
  // page written becomes this process's copy and leaves the file's page (and the page cache's
  // copy of it) as it was; a copy is already this process's memory. For data rewritten in
  // place, e.g. weights repacked at load: one copy of them is resident, not two.
  std::byte* writable(std::span<const std::byte> part);
  // populate(part) below for a mapped file; nothing for a copy, whose pages are in memory.
  void populate(std::span<const std::byte> part) const;
};

// What every format reader (GgufFile, SafetensorsFile) shares: it is made by open (the file
// mapped) or from_bytes (an image in memory, copied), and Reader::parse() validates everything
// before it is returned. Errors name path().
template <class Reader>
class FileReader {
 public:
  // Maps and validates `path`.
  static Reader open(const std::string& path) { return parsed(FileBytes::open(path)); }
  // Validates an in-memory image (copied); `name` stands for the path in errors.
  static Reader from_bytes(std::span<const std::byte> bytes, const std::string& name) {
    return parsed(FileBytes::copy(bytes, name));
  }

  const std::string& path() const { return storage_->name; }
  // A function that makes bytes of this file writable by this process alone
  // (FileBytes::writable); it keeps the file's bytes alive.
  std::function<std::byte*(const void*, size_t)> writable_bytes() const {
    return [s = storage_](const void* data, size_t n) {
      return s->writable({static_cast<const std::byte*>(data), n});
    };
  }

 protected:
  std::shared_ptr<FileBytes> storage_;
  std::span<const std::byte> file_;  // the whole file

 private:
  static Reader parsed(std::shared_ptr<FileBytes> storage) {
    Reader r;
    r.storage_ = std::move(storage);
    r.file_ = r.storage_->bytes();
    r.parse();
    return r;
  }
};

// Faults in the pages under `bytes` (part of a mapping) now, so a later pass over them runs at
// memory speed: madvise(MADV_POPULATE_READ) where the kernel has it, else a read of a byte of
// every page.
void populate(std::span<const std::byte> bytes);

}  // namespace tinylm::io
