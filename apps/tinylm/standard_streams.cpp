#include "standard_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "cli_util.h"
#include "tinylm/core/error.h"

namespace tinylm::cli {

namespace {

// The reason stdout failed, "" when it did not. Flushing gives errno; after an earlier failed
// write whose bytes were dropped, an empty write asks the descriptor itself (a closed one
// says EBADF). std::cout is checked too: a command that unties it from stdio (microgpt)
// writes through its own buffer.
std::string stdout_failure() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0 && std::cout.flush().good();
  if (flushed && std::ferror(stdout) == 0) return "";
  if (errno == 0) (void)::write(STDOUT_FILENO, "", 0);
  return errno != 0 ? std::strerror(errno) : "an earlier write failed";
}

}  // namespace

void hold_standard_descriptors() {
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open returns the lowest free descriptor, which is fd: the ones below are open.
    const int got = ::open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY);
    if (got >= 0 && got != fd) ::close(got);
  }
}

void flush_stdout() {
  const std::string reason = stdout_failure();
  if (!reason.empty()) fail("stdout: write failed: ", reason);
}

int finish_stdout(int code) {
  const std::string reason = stdout_failure();
  if (reason.empty() || code != kExitOk) return code;
  std::fprintf(stderr, "tinylm: error: stdout: write failed: %s\n", reason.c_str());
  return kExitRuntime;
}

}  // namespace tinylm::cli
