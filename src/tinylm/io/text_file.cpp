#include "tinylm/io/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"

namespace tinylm::io {

namespace {

// What can be read whole: a regular file (size known), a FIFO, /dev/null (empty), or (stdin
// only) a terminal. Checked on the path before open, so a device is never opened, and on the
// descriptor after.
void check_readable(const std::string& name, const struct stat& st, bool terminal_ok) {
  if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) return;
  if (S_ISCHR(st.st_mode) && (terminal_ok || st.st_rdev == makedev(1, 3))) return;
  const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  fail(name, ": is ", what, "; give a file (or a pipe) to read");
}

std::string over_limit(const std::string& name, uint64_t max_bytes) {
  return name + ": more than " + size_text(max_bytes) +
         ", the most tinylm reads of one input (docs/limits.md)";
}

// Reads fd to its end, refusing once more than max_bytes have come.
std::string read_all(int fd, const std::string& name, uint64_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > max_bytes) fail(over_limit(name, max_bytes));
  }
  std::string bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(name, ": read error: ", std::strerror(errno));
    }
    if (bytes.size() + static_cast<size_t>(n) > max_bytes) fail(over_limit(name, max_bytes));
    bytes.append(buf, static_cast<size_t>(n));
  }
  return bytes;
}

}  // namespace

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, ": cannot open: ", std::strerror(errno));
  check_readable(path, st, false);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  try {
    // The name may have been swapped since the stat: the descriptor is what is read.
    if (::fstat(fd, &st) != 0) fail(path, ": cannot open: ", std::strerror(errno));
    check_readable(path, st, false);
    std::string bytes = read_all(fd, path, max_bytes);
    ::close(fd);
    return bytes;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string read_stdin(uint64_t max_bytes) {
  struct stat st;
  if (::fstat(STDIN_FILENO, &st) != 0) fail("stdin: cannot read: ", std::strerror(errno));
  check_readable("stdin", st, ::isatty(STDIN_FILENO) != 0);
  return read_all(STDIN_FILENO, "stdin", max_bytes);
}

Documents read_documents(const std::string& path) {
  auto bytes = std::make_shared<const std::string>(read_file(path, kMaxTextBytes));
  const std::string_view text(*bytes);
  size_t bad = 0;
  check(is_valid_utf8(text, &bad), path, ": invalid UTF-8 at byte ", bad);
  std::vector<std::string_view> docs;
  docs.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  size_t i = 0;
  while (i <= text.size()) {
    // Universal newlines: \n, \r\n and a lone \r each end a line (all ASCII, so a byte scan
    // never lands inside a multi-byte character).
    size_t end = i;
    while (end < text.size() && text[end] != '\n' && text[end] != '\r') ++end;
    size_t b = i, e = end;
    int len = 0;
    while (b < e && is_python_space(utf8_at(text, b, &len))) b += len;
    while (e > b) {
      size_t start = e - 1;
      while (start > b && is_utf8_continuation(text[start])) --start;
      if (!is_python_space(utf8_at(text, start, &len))) break;
      e = start;
    }
    if (e > b) docs.push_back(text.substr(b, e - b));
    if (end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n') ++end;
    i = end + 1;
  }
  check(!docs.empty(), path, ": no documents (the file is empty or blank)");
  return Documents(std::move(bytes), std::move(docs));
}

}  // namespace tinylm::io
