#pragma once
// Names of the temporaries AtomicFile and StagedDir create beside their outputs.
#include <string>

namespace tinylm::io {

// prefix + "<pid>.<12 random hex digits>": unique in practice; creators still use O_EXCL
// (or mkdir, which never follows a symlink) and retry on a clash.
std::string temp_name(const std::string& prefix);

// Whether `digits` is the pid of a process that no longer exists (not ours, and kill(pid, 0)
// says ESRCH). False for anything that is not a plain positive number.
bool pid_is_gone(const std::string& digits);

}  // namespace tinylm::io
