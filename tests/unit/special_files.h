#pragma once
// Device nodes, FIFOs and sockets of a test's own, made in its temporary directory: the tests
// of writers and readers that meet them never touch the machine's /dev.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

namespace tinylm::test {

// Device numbers of Linux's memory devices (Documentation/admin-guide/devices.txt): a node
// with them behaves as /dev/null, /dev/zero or /dev/full does.
inline constexpr unsigned kNullMinor = 3, kZeroMinor = 5, kFullMinor = 7;

// mknod needs CAP_MKNOD (CI runs as root); elsewhere the test is skipped and says why.
#define TINYLM_SKIP_UNLESS_ROOT() \
  if (::geteuid() != 0) GTEST_SKIP() << "making device nodes (mknod) needs root"

// A character device node at path with the memory devices' major (1) and this minor.
inline void make_memory_device(const std::string& path, unsigned minor) {
  ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | 0666, ::makedev(1, minor)), 0)
      << path << ": " << std::strerror(errno);
}

// A block device node (a loop device's numbers; it is never opened).
inline void make_block_device(const std::string& path) {
  ASSERT_EQ(::mknod(path.c_str(), S_IFBLK | 0600, ::makedev(7, 250)), 0)
      << path << ": " << std::strerror(errno);
}

inline void make_fifo(const std::string& path) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path << ": " << std::strerror(errno);
}

// A bound Unix socket at path (the descriptor stays open for the test's life; it is tiny).
inline void make_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path) << path;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
}

inline bool is_char_device(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

inline bool is_fifo(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

// Reads everything written into a FIFO while a writer runs: start() before the writer, then
// finish() after it, which returns the bytes. finish() also ends the wait of a reader whose
// writer never came (failed before opening the FIFO).
class FifoReader {
 public:
  explicit FifoReader(std::string path) : path_(std::move(path)) {
    thread_ = std::thread([this] {
      const int fd = ::open(path_.c_str(), O_RDONLY);
      if (fd < 0) return;
      char buf[1 << 16];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) bytes_.append(buf, n);
      ::close(fd);
    });
  }
  ~FifoReader() {
    if (thread_.joinable()) finish();
  }
  std::string finish() {
    // Succeeds only while the reader still waits in open (no writer came): it then sees EOF.
    const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    thread_.join();
    return bytes_;
  }

 private:
  std::string path_, bytes_;
  std::thread thread_;
};

}  // namespace tinylm::test
