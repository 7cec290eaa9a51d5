#pragma once
// The owner of a run directory: an advisory lock (flock) on RUN/.lock, held by the one process
// that writes the run (under mpirun, the first one) from its first write until it exits. A
// second `train --out` or `--resume` on the run is refused, naming the holder's pid (kept in
// the file). The kernel drops the lock when its holder dies, however it dies, so a lock file
// left behind never blocks. It relies on flock working across the processes that share the
// directory: a local filesystem (docs/limits.md).
#include <string>

namespace tinylm::train {

class RunLock {
 public:
  // Takes the lock of the run directory `root` (which must exist), creating RUN/.lock, and
  // records this process's pid in it. Error, naming the run and the holder's pid, when another
  // process holds it.
  static RunLock acquire(const std::string& root);

  // Error, as acquire's, when another process holds the lock of `root`; nothing is created
  // (a directory or lock file that does not exist is not held).
  static void check_free(const std::string& root);

  static constexpr const char* kFileName = ".lock";

  RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace tinylm::train
