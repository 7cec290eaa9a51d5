#pragma once
// A multi-file output (a model directory: config + weights + tokenizer) built under a
// temporary name beside its target and moved into place as a whole, so readers and crashes
// see either the old directory or the complete new one, never a directory with the config
// and no weights.
//
//   StagedDir out(dir, {"config.json", "model.safetensors", "tokenizer.json"});
//   write files into out.path() ...
//   out.commit();
//
// The staging directory is DIR's parent/.NAME.staging.<pid>.<random>, created with mkdir
// (which never follows a symlink). commit() syncs every file in it and the directory, then:
// a missing (or empty) target is replaced by one rename; an existing target directory that
// holds only names from `replaceable` (what this output consists of) is exchanged with the
// new one in one atomic step (renameat2 RENAME_EXCHANGE; two renames where the filesystem
// lacks it) and the old one removed. A target holding anything else, or one that is not a
// directory, is refused (check_target() says so before any work). Without commit() the
// staging directory is removed; one orphaned by a SIGKILL is removed by the next commit to
// the same target (its pid is gone).
#include <cstdint>
#include <string>
#include <vector>

namespace tinylm::io {

class StagedDir {
 public:
  StagedDir(std::string target, std::vector<std::string> replaceable);
  ~StagedDir();
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  const std::string& path() const { return staging_; }
  std::string file(const std::string& name) const { return staging_ + "/" + name; }
  void commit();

 private:
  std::string target_, staging_;
  std::vector<std::string> replaceable_;
  bool committed_ = false;
};

// Throws Error unless `target` can become a StagedDir output: its parent exists and takes a
// new directory; it is missing, empty, or a directory holding only `replaceable` names; and
// the filesystem has about `expected_bytes` free. For checking before long work.
void check_staged_target(const std::string& target, const std::vector<std::string>& replaceable,
                         uint64_t expected_bytes = 0);

}  // namespace tinylm::io
