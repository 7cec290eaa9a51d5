#include "tinylm/io/staged_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/temp_name.h"

namespace tinylm::io {

namespace fs = std::filesystem;

namespace {

std::string strip_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string staging_prefix(const std::string& target) {
  const size_t slash = target.find_last_of('/');
  const std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  return parent_dir(target) + "/." + base + ".staging.";
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) fail(dir, ": cannot list: ", std::strerror(errno));
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

// Whether target exists; throws when it exists and may not be replaced.
bool check_replaceable(const std::string& target, const std::vector<std::string>& replaceable) {
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    fail(target, ": cannot write: ", std::strerror(errno));
  }
  check(!S_ISLNK(st.st_mode), target, ": is a symlink; give a new directory to write");
  check(S_ISDIR(st.st_mode), target, ": exists and is not a directory");
  for (const std::string& name : entries(target)) {
    struct stat e;
    const bool ours = std::find(replaceable.begin(), replaceable.end(), name) != replaceable.end();
    check(ours && ::lstat((target + "/" + name).c_str(), &e) == 0 && S_ISREG(e.st_mode), target,
          ": exists and holds '", name,
          "', which this command does not write; choose a new directory or empty this one");
  }
  return true;
}

}  // namespace

void check_staged_target(const std::string& given, const std::vector<std::string>& replaceable,
                         uint64_t expected_bytes) {
  const std::string target = strip_slashes(given);
  check(!target.empty(), "output directory: empty path");
  check_replaceable(target, replaceable);
  const std::string parent = parent_dir(target);
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0)
    fail(target, ": cannot write: directory ", parent, ": ", std::strerror(errno));
  check(S_ISDIR(st.st_mode), target, ": cannot write: ", parent, " is not a directory");
  const std::string probe = temp_name(staging_prefix(target));
  if (::mkdir(probe.c_str(), 0700) != 0) fail(target, ": cannot write: ", std::strerror(errno));
  ::rmdir(probe.c_str());
  if (expected_bytes == 0) return;
  struct statvfs v;
  if (::statvfs(parent.c_str(), &v) != 0) return;
  const uint64_t free_bytes = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  check(free_bytes >= expected_bytes, target, ": needs about ", (expected_bytes + 999999) / 1000000,
        " MB, but ", parent, " has only ", free_bytes / 1000000, " MB free");
}

StagedDir::StagedDir(std::string target, std::vector<std::string> replaceable)
    : target_(strip_slashes(std::move(target))), replaceable_(std::move(replaceable)) {
  check(!target_.empty(), "output directory: empty path");
  check_replaceable(target_, replaceable_);
  for (int attempt = 0;; ++attempt) {
    staging_ = temp_name(staging_prefix(target_));
    if (::mkdir(staging_.c_str(), 0777) == 0) break;
    if (errno != EEXIST || attempt == 63) fail(target_, ": cannot write: ", std::strerror(errno));
  }
}

StagedDir::~StagedDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagedDir::commit() {
  check(!committed_, target_, ": committed twice");
  for (const std::string& name : entries(staging_)) fsync_path(staging_ + "/" + name);
  fsync_path(staging_);
  if (!check_replaceable(target_, replaceable_)) {
    if (std::rename(staging_.c_str(), target_.c_str()) != 0)
      fail(target_, ": cannot write: ", std::strerror(errno));
  } else {
    // Swap the two directories in one step; the old one then sits at the staging name.
    int rc = -1;
#ifdef RENAME_EXCHANGE
    rc = ::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE);
#else
    errno = ENOSYS;
#endif
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
      // No exchange here: move the old one aside, then the new one in (a crash between the
      // two leaves the old one under .NAME.staging.<pid>.<random>.old).
      const std::string old = staging_ + ".old";
      if (std::rename(target_.c_str(), old.c_str()) != 0)
        fail(target_, ": cannot replace: ", std::strerror(errno));
      if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
        const int err = errno;
        std::rename(old.c_str(), target_.c_str());
        fail(target_, ": cannot replace: ", std::strerror(err));
      }
      rc = std::rename(old.c_str(), staging_.c_str());
      if (rc != 0) fs::remove_all(old);
      rc = 0;
    }
    if (rc != 0) fail(target_, ": cannot replace: ", std::strerror(errno));
  }
  committed_ = true;
  fsync_path(parent_dir(target_));
  std::error_code ec;
  fs::remove_all(staging_, ec);  // the old directory, if there was one
  remove_stale_temporaries(target_);
}

}  // namespace tinylm::io
