#include "tinylm/io/output_target.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"

namespace tinylm::io {

namespace {

// The canonical name of the /proc magic link that `path` leads to through its symlinks
// (/dev/stdout -> /proc/self/fd/1 gives "/proc/<pid>/fd/1"), or "" when it leads to none.
// Such a link names an open file, not a directory entry a writer could replace.
std::string proc_link(const std::string& path) {
  std::string p = path;
  for (int hop = 0; hop < 40; ++hop) {  // 40: the kernel's own limit on nested links
    char dir[PATH_MAX];
    if (!::realpath(parent_dir(p).c_str(), dir)) return "";
    const size_t slash = p.find_last_of('/');
    const std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
    const std::string canonical = std::string(dir) + (dir[1] ? "/" : "") + name;
    struct stat st;
    if (::lstat(canonical.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return "";
    if (canonical.starts_with("/proc/")) return canonical;
    char target[PATH_MAX];
    const ssize_t n = ::readlink(canonical.c_str(), target, sizeof target - 1);
    if (n <= 0) return "";
    const std::string t(target, static_cast<size_t>(n));
    p = t.starts_with('/') ? t : std::string(dir) + "/" + t;
  }
  return "";
}

// The descriptor N of "/proc/<our pid>/fd/N", else -1.
int own_descriptor(const std::string& link) {
  const std::string prefix = "/proc/" + std::to_string(::getpid()) + "/fd/";
  if (!link.starts_with(prefix)) return -1;
  const std::string digits = link.substr(prefix.size());
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != digits.npos)
    return -1;
  return std::atoi(digits.c_str());
}

}  // namespace

OutputMode output_mode(const std::string& path) {
  check(!path.empty(), "output path is empty");
  if (path.back() == '/') fail(path, ": is a directory; give a file name to write");
  if (!proc_link(path).empty()) return OutputMode::stream;
  struct stat st;
  // Not there (or a dangling link): created by the rename. Any other failure (no such
  // directory, no permission) is for the write itself to report.
  if (::stat(path.c_str(), &st) != 0) return OutputMode::replace;
  if (S_ISREG(st.st_mode)) return OutputMode::replace;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return OutputMode::stream;
  if (S_ISDIR(st.st_mode)) fail(path, ": is a directory; give a file name to write");
  if (S_ISBLK(st.st_mode)) fail(path, ": is a block device; give a file name to write");
  if (S_ISSOCK(st.st_mode)) fail(path, ": is a socket; give a file name to write");
  fail(path, ": is not a regular file; give a file name to write");
}

int open_in_place(const std::string& path) {
  const int own = own_descriptor(proc_link(path));
  if (own >= 0) {
    // Whatever stdio still holds for that descriptor goes first, in order.
    if (own == STDOUT_FILENO) std::fflush(stdout);
    if (own == STDERR_FILENO) std::fflush(stderr);
    return ::fcntl(own, F_DUPFD_CLOEXEC, 3);
  }
  return ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
}

}  // namespace tinylm::io
