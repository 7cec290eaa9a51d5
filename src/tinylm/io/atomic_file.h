#pragma once
// Writes go to PATH.tmp.<pid> and are renamed over PATH on commit(), so a crash or an error
// never leaves a half-written file where a good one was. Without commit() the temporary
// file is removed.
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
  void commit();  // flush, fsync, rename; throws Error naming the path on failure

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
};

}  // namespace tinylm::io
