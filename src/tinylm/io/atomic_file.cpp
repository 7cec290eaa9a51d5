#include "tinylm/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <random>

#include "tinylm/core/error.h"
#include "tinylm/io/output_target.h"
#include "tinylm/io/temp_name.h"
#include "tinylm/io/text_file.h"

namespace tinylm::io {

namespace {

constexpr size_t kWritebackChunk = size_t{32} << 20;

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Opens a new file PATH.tmp.<pid>.<random> that did not exist before: O_EXCL refuses any
// existing name (a symlink included, dangling or not), O_NOFOLLOW as well. Returns the fd and
// sets tmp; -1 with errno set when it cannot be created.
int create_temp_file(const std::string& path, std::string& tmp) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    tmp = temp_name(path + ".tmp.");
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

std::string temp_name(const std::string& prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          (static_cast<uint64_t>(::getpid()) << 32));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = prefix + std::to_string(::getpid()) + ".";
  uint64_t r = rng();
  for (int i = 0; i < 12; ++i, r >>= 4) name += kHex[r & 15];
  return name;
}

bool pid_is_gone(const std::string& digits) {
  if (digits.empty() || digits.size() > 9) return false;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  const long pid = std::stol(digits);
  if (pid <= 0 || pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  check(!path_.empty() && path_.back() != '/', path_, ": cannot write: not a file name");
  in_place_ = output_mode(path_) == OutputMode::stream;
  const int fd = in_place_ ? open_in_place(path_) : create_temp_file(path_, tmp_);
  if (fd < 0) fail(path_, ": cannot write: ", std::strerror(errno));
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    const int err = errno;
    ::close(fd);
    if (!in_place_) ::unlink(tmp_.c_str());
    fail(path_, ": cannot write: ", std::strerror(err));
  }
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    if (!in_place_) ::unlink(tmp_.c_str());
  }
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
    if (!in_place_ && written_ - handed_to_disk_ >= kWritebackChunk) start_writeback();
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
  if (in_place_) return commit_in_place();
  const bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
  const int err = errno;
  std::fclose(f_);
  f_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = ok ? errno : err;
    ::unlink(tmp_.c_str());
    fail(path_, ": cannot write: ", std::strerror(e));
  }
  fsync_path(parent_dir(path_));  // the rename itself is only durable once the directory is
  remove_stale_temporaries(path_);
}

void AtomicFile::commit_in_place() {
  // A device or a pipe cannot be synced (EINVAL); a regular file behind /dev/stdout can.
  bool ok = std::fflush(f_) == 0;
  int err = errno;
  if (ok && ::fsync(::fileno(f_)) != 0 && errno != EINVAL && errno != EROFS) {
    ok = false;
    err = errno;
  }
  if (std::fclose(f_) != 0 && ok) {
    ok = false;
    err = errno;
  }
  f_ = nullptr;
  if (!ok) fail(path_, ": write failed: ", std::strerror(err));
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

void copy_file_atomic(const std::string& from, const std::string& to) {
  const std::string bytes = read_file(from);
  write_file_atomic(to, std::as_bytes(std::span(bytes.data(), bytes.size())));
}

int remove_stale_temporaries(const std::string& path) {
  const std::string dir = parent_dir(path), base = base_name(path);
  if (base.empty()) return 0;
  const std::string tmp_prefix = base + ".tmp.", staging_prefix = "." + base + ".staging.";
  std::vector<std::string> stale;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      for (const std::string& prefix : {tmp_prefix, staging_prefix}) {
        if (!name.starts_with(prefix)) continue;
        // <pid> or <pid>.<suffix> (the first form is what older versions wrote).
        const std::string rest = name.substr(prefix.size());
        const size_t dot = rest.find('.');
        if (dot == rest.size() - 1) continue;
        if (pid_is_gone(rest.substr(0, dot))) stale.push_back(dir + "/" + name);
      }
    }
    ::closedir(d);
  }
  int removed = 0;
  for (const std::string& p : stale) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) continue;
    std::error_code ec;
    if (S_ISDIR(st.st_mode)) {
      // Only staging directories (tmp files are never directories we made).
      if (base_name(p).starts_with(staging_prefix) &&
          std::filesystem::remove_all(p, ec) != static_cast<std::uintmax_t>(-1) && !ec)
        ++removed;
    } else if (::unlink(p.c_str()) == 0) {
      ++removed;
    }
  }
  return removed;
}

void probe_output(const std::string& path, uint64_t expected_bytes) {
  if (output_mode(path) == OutputMode::stream) {
    // Written in place: nothing to create beside it, no space to need. Not opened here: a
    // FIFO's open waits for its reader.
    if (::access(path.c_str(), W_OK) != 0) fail(path, ": cannot write: ", std::strerror(errno));
    return;
  }
  struct stat st;
  const std::string dir = parent_dir(path);
  if (::stat(dir.c_str(), &st) != 0)
    fail(path, ": cannot write: directory ", dir, ": ", std::strerror(errno));
  check(S_ISDIR(st.st_mode), path, ": cannot write: ", dir, " is not a directory");
  std::string tmp;
  const int fd = create_temp_file(path, tmp);
  if (fd < 0) fail(path, ": cannot write: ", std::strerror(errno));
  ::close(fd);
  ::unlink(tmp.c_str());
  if (expected_bytes == 0) return;
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) != 0) return;  // cannot tell: the write itself will say
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  check(free_bytes >= expected_bytes, path, ": needs about ", (expected_bytes + 999999) / 1000000,
        " MB, but ", dir, " has only ", free_bytes / 1000000, " MB free");
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
