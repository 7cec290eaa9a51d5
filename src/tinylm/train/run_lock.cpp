#include "tinylm/train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tinylm/core/error.h"

namespace tinylm::train {

namespace {

std::string lock_path(const std::string& root) { return root + "/" + RunLock::kFileName; }

// The pid the holder wrote (it writes it right after taking the lock, so it may be missing
// for a moment).
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t got = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid = got > 0 ? std::string(buf, static_cast<size_t>(got)) : std::string();
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  const bool digits = !pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos;
  return digits ? "pid " + pid : "pid not yet recorded";
}

// Takes the lock of the open lock file, or throws naming the holder (and closes fd).
void lock_or_fail(int fd, const std::string& root) {
  int rc = 0;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return;
  const int err = errno;
  const std::string holder = err == EWOULDBLOCK ? holder_pid(fd) : std::string();
  ::close(fd);
  if (err != EWOULDBLOCK) fail(lock_path(root), ": cannot lock: ", std::strerror(err));
  fail(root, ": in use by another tinylm process (", holder,
       " holds its lock); wait for it to end, or stop it first");
}

}  // namespace

RunLock RunLock::acquire(const std::string& root) {
  const std::string path = lock_path(root);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  lock_or_fail(fd, root);
  RunLock lock(fd);
  // The pid is for the refusal message only: the lock itself is the flock.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0)
    fail(path, ": cannot write: ", std::strerror(errno));
  return lock;
}

void RunLock::check_free(const std::string& root) {
  const int fd = ::open(lock_path(root).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // no lock file: nobody has held it
  lock_or_fail(fd, root);
  ::close(fd);  // releases the probe's lock
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace tinylm::train
