#include "tinylm/train/run_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"

namespace tinylm::train {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kStepPrefix = "step-";
constexpr std::string_view kTempPrefix = ".step-";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr std::string_view kLatestTemp = ".latest.tmp";

std::string step_name(int64_t step) {  // step >= 0
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

// The step of a checkpoint directory's name, or -1 when the name is not one. Only the
// canonical spelling counts, so no step has two directories.
int64_t parse_step_name(const std::string& name) {
  if (!name.starts_with(kStepPrefix)) return -1;
  const char* first = name.data() + kStepPrefix.size();
  const char* last = name.data() + name.size();
  int64_t step = -1;
  const auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last || step < 0 || step_name(step) != name) return -1;
  return step;
}

void remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  check(!ec, path.string(), ": cannot remove: ", ec.message());
}

bool is_real_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(path, ec));
}

// fsync every file and directory under dir, then dir itself.
void sync_tree(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (!ec && (fs::is_regular_file(st) || fs::is_directory(st))) io::fsync_path(it->path());
  }
  check(!ec, dir, ": cannot list: ", ec.message());
  io::fsync_path(dir);
}

}  // namespace

RunDir::RunDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  check(!root_.empty(), "run directory: empty path");
  std::error_code ec;
  const fs::file_status st = fs::status(root_, ec);
  if (fs::exists(st)) {
    check(fs::is_directory(st), root_, ": exists and is not a directory");
  } else {
    fs::create_directories(root_, ec);
    check(!ec, root_, ": cannot create the run directory: ", ec.message());
  }
  if (::access(root_.c_str(), W_OK | X_OK) != 0)
    fail(root_, ": run directory is not writable: ", std::strerror(errno));
}

std::string RunDir::checkpoint_path(int64_t step) const {
  check(step >= 0, root_, ": checkpoint step must be >= 0 (got ", step, ")");
  return root_ + "/" + step_name(step);
}

std::string RunDir::temp_path(int64_t step) const {
  check(step >= 0, root_, ": checkpoint step must be >= 0 (got ", step, ")");
  return root_ + "/." + step_name(step) + std::string(kTempSuffix);
}

std::string RunDir::begin_checkpoint(int64_t step) {
  const std::string tmp = temp_path(step);
  remove_tree(tmp);
  std::error_code ec;
  fs::create_directory(tmp, ec);
  check(!ec, tmp, ": cannot create: ", ec.message());
  return tmp;
}

std::string RunDir::commit_checkpoint(int64_t step, int keep) {
  check(keep >= 1, root_, ": checkpoints to keep must be at least 1 (got ", keep, ")");
  const std::string path = publish_checkpoint(step);
  point_latest(step);
  prune(step, keep);
  return path;
}

std::string RunDir::publish_checkpoint(int64_t step) {
  const std::string tmp = temp_path(step), path = checkpoint_path(step);
  check(is_real_dir(tmp), tmp, ": no checkpoint in progress (begin_checkpoint first)");
  sync_tree(tmp);
  // A directory of the same step (from an attempt that resume then passed over) gives way:
  // rename cannot replace a non-empty directory.
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) remove_tree(path);
  fs::rename(tmp, path, ec);
  check(!ec, tmp, ": cannot rename to ", path, ": ", ec.message());
  io::fsync_path(root_);
  return path;
}

void RunDir::point_latest(int64_t step) {
  const std::string target = fs::path(checkpoint_path(step)).filename().string();
  const std::string tmp = root_ + "/" + std::string(kLatestTemp), link = latest_link();
  std::error_code ec;
  fs::remove(tmp, ec);                  // a leftover from a crash; missing is fine
  fs::create_symlink(target, tmp, ec);  // relative: the run directory can move
  check(!ec, tmp, ": cannot create symlink: ", ec.message());
  fs::rename(tmp, link, ec);  // rename(2) replaces `latest` atomically
  check(!ec, link, ": cannot replace: ", ec.message());
  io::fsync_path(root_);
}

void RunDir::prune(int64_t committed, int keep) {
  check(keep >= 1, root_, ": checkpoints to keep must be at least 1 (got ", keep, ")");
  const std::vector<Checkpoint> all = checkpoints();
  const size_t old = all.size() > static_cast<size_t>(keep) ? all.size() - keep : 0;
  for (size_t i = 0; i < old; ++i)
    if (all[i].step != committed) remove_tree(all[i].path);
}

std::vector<Checkpoint> RunDir::checkpoints() const {
  std::vector<Checkpoint> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root_, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const int64_t step = parse_step_name(it->path().filename().string());
    if (step >= 0 && is_real_dir(it->path())) out.push_back({step, it->path().string()});
  }
  check(!ec, root_, ": cannot list: ", ec.message());
  std::sort(out.begin(), out.end(),
            [](const Checkpoint& a, const Checkpoint& b) { return a.step < b.step; });
  return out;
}

int RunDir::remove_stale_temporaries() {
  std::vector<fs::path> stale;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root_, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if ((name.starts_with(kTempPrefix) && name.ends_with(kTempSuffix)) || name == kLatestTemp)
      stale.push_back(it->path());
  }
  check(!ec, root_, ": cannot list: ", ec.message());
  for (const fs::path& p : stale) remove_tree(p);  // not while iterating the directory
  return static_cast<int>(stale.size());
}

bool RunDir::looks_like_run(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(path) / "run.json", ec);
}

}  // namespace tinylm::train
