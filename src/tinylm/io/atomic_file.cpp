#include "tinylm/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tinylm/core/error.h"

namespace tinylm::io {

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) fail(path_, ": cannot write: ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

namespace {
constexpr size_t kWritebackChunk = size_t{32} << 20;
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  check(f_ != nullptr, path_, ": write after commit");
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), handed_to_disk_ + kWritebackChunk - written_);
    if (std::fwrite(bytes.data(), 1, n, f_) != n) {
      fail(path_, ": write failed: ", std::strerror(errno));
    }
    written_ += n;
    bytes = bytes.subspan(n);
    if (written_ - handed_to_disk_ >= kWritebackChunk) start_writeback();
  }
}

void AtomicFile::start_writeback() {
  if (std::fflush(f_) != 0) fail(path_, ": write failed: ", std::strerror(errno));
#if defined(__linux__)
  // Only starts the writes; errors surface at commit()'s fsync, which waits for them.
  ::sync_file_range(::fileno(f_), static_cast<off_t>(handed_to_disk_),
                    static_cast<off_t>(written_ - handed_to_disk_), SYNC_FILE_RANGE_WRITE);
#endif
  handed_to_disk_ = written_;
}

void AtomicFile::commit() {
  check(f_ != nullptr, path_, ": committed twice");
  const bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
  const int err = errno;
  std::fclose(f_);
  f_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = ok ? errno : err;
    std::remove(tmp_.c_str());
    fail(path_, ": cannot write: ", std::strerror(e));
  }
  fsync_path(parent_dir(path_));  // the rename itself is only durable once the directory is
}

void fsync_path(const std::string& path) {
  // O_RDONLY opens directories as well as files; fsync needs no write access.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open to sync: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail(path, ": fsync failed: ", std::strerror(err));
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace tinylm::io
