#pragma once
// `tinylm train` as a library call: a training run in a run directory (docs/training.md).
// A fresh run writes RUN/run.json, tokenizes the text once into RUN/tokens.bin, and trains
// through the shared loop, logging RUN/metrics.jsonl and writing checkpoints RUN/step-N/
// (the model in its family's format + train_state.bin). A resumed run reads all of that back
// and continues from the newest complete checkpoint, bit for bit as if it had not stopped.
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tinylm::train {

class TrainFamilies;  // family.h

struct RunRequest {
  std::string dir;  // --out (fresh) or --resume
  bool resume = false;
  nlohmann::ordered_json given;       // the flags given on the command line, by name ("seq-len")
  std::FILE* log = stderr;            // progress and notes
  bool terminal = false;              // log is a terminal: one progress line rewritten in place
  std::function<bool()> should_stop;  // checked after each step: checkpoint and return
  double peak_flops = 0.0;            // the machine's peak FLOP/s for MFU; 0: not shown
};

struct RunSummary {
  int64_t steps = 0;       // steps done in all (the run's step counter)
  double last_loss = 0.0;  // the last step's training loss
  std::optional<double> best_val_loss;
  std::string checkpoint;  // the last checkpoint written
  bool stopped = false;    // should_stop ended it early
};

// Every flag is checked (a wrong one is a FlagError, run_config.h) before anything in the run
// directory is written; a run another process is training is refused (train/run_lock.h).
// `families`: those --arch (or a resumed run's run.json) may name (the CLI's
// families::trainable()).
RunSummary run_training(const TrainFamilies& families, const RunRequest& request);

}  // namespace tinylm::train
