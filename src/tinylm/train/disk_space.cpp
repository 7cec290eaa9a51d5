#include "tinylm/train/disk_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tinylm/core/error.h"
#include "tinylm/train/family.h"
#include "tinylm/train/token_file.h"

namespace tinylm::train {

namespace fs = std::filesystem;

namespace {

// Room for the small files beside the weights (config.json, the vocabulary, the state's JSON).
constexpr uint64_t kSmallFiles = uint64_t{4} << 20;

// The bytes of the regular files under path (a file: its size; missing: 0).
uint64_t bytes_under(const fs::path& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  uint64_t sum = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) sum += it->file_size(size_ec);
  }
  return sum;
}

// The model --init-from names (or a fresh one): its parameter count and saved bytes.
ModelSize model_size(const TrainFamily& family, const RunConfig& c) {
  try {
    return family.model_size(c);
  } catch (const Error&) {
    // A file the loader will name; until then, the size of what the flag names.
    const uint64_t bytes = bytes_under(c.init_from);
    return {bytes / 4, bytes};
  }
}

}  // namespace

uint64_t DiskNeed::total() const {
  return (model_bytes + moment_bytes) * static_cast<uint64_t>(checkpoints) + tokens_bytes;
}

DiskNeed estimate_disk_need(const TrainFamily& family, const RunConfig& c,
                            const std::vector<Checkpoint>& existing) {
  DiskNeed need;
  // The newest --keep stay while the next one is written.
  need.checkpoints = c.keep + 1 - static_cast<int64_t>(existing.size());
  if (need.checkpoints < 1) need.checkpoints = 1;
  if (!existing.empty()) {  // resumed: its checkpoints are what the next ones will be
    const fs::path newest(existing.back().path);
    need.moment_bytes = bytes_under(newest / "train_state.bin");
    need.model_bytes = bytes_under(newest) - need.moment_bytes;
    return need;
  }
  const ModelSize model = model_size(family, c);
  const auto width = static_cast<uint64_t>(family.param_bytes);
  need.model_bytes = model.saved_bytes + kSmallFiles;
  need.moment_bytes = c.optimizer == "adamw" ? 2 * width * model.params : 0;
  if (family.token_file) {
    // Byte-level BPE: at most one token per byte, 4-byte ids at most.
    for (const std::string& f : expand_data_paths(c.data)) need.tokens_bytes += 4 * bytes_under(f);
  }
  return need;
}

uint64_t available_bytes(const std::string& path) {
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs st {};
  if (::statvfs(p.c_str(), &st) != 0)
    fail(p.string(), ": cannot query free space: ", std::strerror(errno));
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

void check_disk_space(const std::string& dir, const DiskNeed& need, uint64_t available) {
  if (need.total() <= available) return;
  const auto mb = [](uint64_t b) { return static_cast<double>(b) / 1e6; };
  fail(dir, ": ", mb(available), " MB free on its filesystem, the run needs about ",
       mb(need.total()), " MB (", need.checkpoints, " checkpoint(s) of ",
       mb(need.model_bytes + need.moment_bytes), " MB: model ", mb(need.model_bytes),
       " MB + optimizer moments ", mb(need.moment_bytes), " MB; tokens.bin up to ",
       mb(need.tokens_bytes), " MB); free some space, lower --keep, or choose another directory");
}

}  // namespace tinylm::train
