#pragma once
// The run directory of `tinylm train --out RUN`:
//
//   RUN/run.json            the run's configuration
//   RUN/tokens.bin          the tokenized training text
//   RUN/metrics.jsonl       one JSON object per line
//   RUN/step-00000100/      a checkpoint (the model + train_state.bin)
//   RUN/latest -> step-00000100
//
// A checkpoint is written into RUN/.step-NNNNNNNN.tmp, then committed: every file in it
// fsync'd, the directory renamed to step-NNNNNNNN, RUN fsync'd, `latest` replaced (a new
// symlink under a temporary name renamed over it), RUN fsync'd, and older checkpoints beyond
// the newest `keep` deleted. A crash at any point leaves every committed checkpoint whole;
// `latest` may lag the newest one, so resuming goes by checkpoints(), not by `latest`.
#include <cstdint>
#include <string>
#include <vector>

namespace tinylm::train {

struct Checkpoint {
  int64_t step = 0;
  std::string path;  // RUN/step-NNNNNNNN
};

class RunDir {
 public:
  // Opens the directory, creating it (and its parents) if missing. Error, naming the path,
  // when it exists and is not a directory or cannot be written.
  explicit RunDir(std::string root);

  const std::string& root() const { return root_; }
  std::string run_json() const { return root_ + "/run.json"; }
  std::string metrics_jsonl() const { return root_ + "/metrics.jsonl"; }
  std::string tokens_bin() const { return root_ + "/tokens.bin"; }
  std::string latest_link() const { return root_ + "/latest"; }
  std::string checkpoint_path(int64_t step) const;  // RUN/step-%08lld
  std::string temp_path(int64_t step) const;        // RUN/.step-%08lld.tmp

  // A fresh, empty temporary directory for the checkpoint of `step` (a stale one from an
  // earlier attempt is removed first). Write the checkpoint's files there, then commit.
  std::string begin_checkpoint(int64_t step);

  // The protocol above; returns the checkpoint's path. An existing step-NNNNNNNN of the same
  // step is replaced. Of the others, the `keep` (>= 1) newest stay, as does the one committed.
  std::string commit_checkpoint(int64_t step, int keep);

  // commit_checkpoint's three parts, in its order (public so that tests can stop between
  // them, as a crash would): sync the temporary directory and rename it into place (sync
  // RUN); point `latest` at it (sync RUN); delete all but the `keep` newest and `committed`.
  std::string publish_checkpoint(int64_t step);
  void point_latest(int64_t step);
  void prune(int64_t committed, int keep);

  // The committed checkpoints (step-N directories), oldest first.
  std::vector<Checkpoint> checkpoints() const;

  // Removes what a crash mid-checkpoint leaves: .step-*.tmp directories and a half-made
  // `latest` symlink. Returns how many entries were removed.
  int remove_stale_temporaries();

  // Whether path is a run directory (it holds run.json).
  static bool looks_like_run(const std::string& path);

 private:
  std::string root_;
};

}  // namespace tinylm::train
