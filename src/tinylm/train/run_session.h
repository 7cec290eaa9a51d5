#pragma once
// Inside run_training: each family sets up its model, data and file writer (run_gpt2.cpp,
// run_evermind.cpp, run_microgpt.cpp) and hands them to drive(), which runs the loop with the
// metrics, progress and checkpoints that are the same for all.
#include <functional>
#include <optional>
#include <string>

#include "tinylm/core/parallel.h"
#include "tinylm/distributed/comm.h"
#include "tinylm/train/loop.h"
#include "tinylm/train/run.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/run_dir.h"
#include "tinylm/train/token_file.h"
#include "tinylm/train/train_state.h"
#include "tinylm/train/window_data.h"

namespace tinylm::train {

template <class T>
struct Session {
  Trainable<T>& model;
  StepData& data;
  std::function<void(const std::string& dir)> save_model;  // the family's files into dir
  // A short text the model writes now, from the step's seed (--sample-every); null where the
  // family has none.
  std::function<std::string(uint64_t seed)> sample = nullptr;
};

template <class T>
RunSummary drive(const RunConfig& config, RunDir& dir, const RunRequest& request,
                 Session<T> session, std::optional<TrainState<T>> resumed);

// The training state of the checkpoint a run resumes from (nullopt for a fresh run), loaded
// and checked against the run's architecture, the checkpoint's step and the CRCs of the
// checkpoint's files before anything else is set up (a state without CRCs: a note on log).
template <class T>
std::optional<TrainState<T>> resume_state(const RunConfig& config,
                                          const std::optional<Checkpoint>& resume, std::FILE* log);

RunSummary run_gpt2(const RunConfig& config, RunDir& dir, const RunRequest& request,
                    const std::optional<Checkpoint>& resume);
RunSummary run_evermind(const RunConfig& config, RunDir& dir, const RunRequest& request,
                        const std::optional<Checkpoint>& resume);
RunSummary run_microgpt(const RunConfig& config, RunDir& dir, const RunRequest& request,
                        const std::optional<Checkpoint>& resume);

// The batch's shards (processes x devices) and the rows of each micro-batch one shard trains.
inline int64_t run_shards(const RunConfig& c) {
  return distributed::Comm::world().size() * c.devices;
}
inline int64_t shard_rows(const RunConfig& c) { return c.batch / run_shards(c); }
// Whether the run's gradient exchange overlaps the backward (--overlap).
inline bool overlap_exchange(const RunConfig& c) {
  return distributed::Comm::world().overlap_exchange(distributed::parse_overlap(c.overlap),
                                                     num_threads());
}

// make() on the first process, then on the others once it is done: for a file in the run
// directory that the first process writes and the others then find and read (tokens.bin,
// EvermindLM's tokenizer.json).
template <class Make>
auto root_first(Make&& make) {
  distributed::Comm& comm = distributed::Comm::world();
  if (!comm.root()) comm.barrier();
  auto made = make();
  if (comm.root()) comm.barrier();
  return made;
}

// The text sources of the run, expanded (directories into their files).
std::vector<std::string> data_files(const RunConfig& config);

// The text of a GPT-2 or EvermindLM run: RUN/tokens.bin built (or reused), split into training
// and validation windows, and the batches cut from them. Built in place: data refers to the
// two members before it.
struct TextData {
  // Notes on log that an existing tokens.bin was rebuilt, and why.
  TextData(const RunConfig& config, const RunDir& dir, const TokenizerIdentity& identity,
           const Encoder& encoder, std::FILE* log);
  TextData(const TextData&) = delete;
  TextData& operator=(const TextData&) = delete;

  TokenFileBuild tokens;
  WindowSampler sampler;
  WindowData data;
};

}  // namespace tinylm::train
