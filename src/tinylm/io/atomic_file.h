#pragma once
// Writes go to PATH.tmp.<pid> and are renamed over PATH on commit(), so a crash or an error
// never leaves a half-written file where a good one was. Without commit() the temporary
// file is removed. commit() syncs the file before the rename and the directory after it, so
// once it returns the new file survives a power loss too.
//
// Large files are handed to the disk while they are written (every 32 MiB, without waiting
// for it): otherwise the kernel holds the dirty pages until commit()'s fsync, and writing a
// checkpoint takes the copy plus the whole disk write instead of the longer of the two.
#include <cstddef>
#include <cstdio>
#include <span>
#include <string>

namespace tinylm::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  void commit();  // flush, fsync, rename, fsync the directory; throws Error naming the path

 private:
  void start_writeback();

  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  size_t written_ = 0, handed_to_disk_ = 0;  // bytes
};

// fsync(2) on a file or a directory (a directory's sync makes the renames and creations in it
// durable). Throws Error naming the path. A filesystem that cannot sync directories (EINVAL)
// is not an error: there is nothing more to do there.
void fsync_path(const std::string& path);

// The directory that holds path ("." for a bare name), for syncing after a rename.
std::string parent_dir(const std::string& path);

}  // namespace tinylm::io
