#pragma once
// The disk a run will fill, estimated before any work, so that a full disk is found at the
// start rather than at the first checkpoint (step 500 by default): each checkpoint holds the
// model and the optimizer's moments, and a run keeps --keep of them while it writes the next;
// a fresh GPT-2 or EvermindLM run also writes tokens.bin.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tinylm/train/run_config.h"
#include "tinylm/train/run_dir.h"

namespace tinylm::train {

struct TrainFamily;  // family.h

struct DiskNeed {
  uint64_t model_bytes = 0;   // the model's files in one checkpoint
  uint64_t moment_bytes = 0;  // train_state.bin: the optimizer's moments
  int64_t checkpoints = 0;    // checkpoints that may lie on disk at once, beyond those there
  uint64_t tokens_bytes = 0;  // tokens.bin, at most
  uint64_t total() const;
};

// A fresh run's need (`existing` empty), from its flags and the sizes of the files they name
// (--init-from's header, --data); a resumed run's from its newest checkpoint's files, of which
// `existing` (oldest first) are there already.
DiskNeed estimate_disk_need(const TrainFamily& family, const RunConfig& config,
                            const std::vector<Checkpoint>& existing);

// The bytes an unprivileged process may still write on the filesystem of `path` (or of its
// nearest existing parent, for a directory not made yet).
uint64_t available_bytes(const std::string& path);

// Error naming `dir`, the space free and the need's parts, when the need exceeds `available`.
void check_disk_space(const std::string& dir, const DiskNeed& need, uint64_t available);

}  // namespace tinylm::train
