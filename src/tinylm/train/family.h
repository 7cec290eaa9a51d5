#pragma once
// How a family trains (`tinylm train --arch NAME`): the options it accepts, its defaults, the
// checks of a fresh model's shape, the size of what it writes, its tokenizer defaults and its
// run entry (run_gpt2.cpp, ...). Each family's record (families/) holds its TrainFamily, and the
// caller hands train/ the list (TrainFamilies): train/ knows no family by name.
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tinylm::train {

struct RunConfig;
struct RunRequest;
struct RunSummary;
struct Checkpoint;
class RunDir;

// The model a run trains: its parameter count and the bytes of its files in a checkpoint.
struct ModelSize {
  uint64_t params = 0, saved_bytes = 0;
};

struct TrainFamily {
  // The flags only some families take, space-separated: `shape`, those that make a fresh
  // model (refused with --init-from, whose model has its own shape), and `options`, the rest.
  // A given flag of another family's is refused, naming the families that take it: no flag is
  // silently ignored.
  std::string_view shape{}, options{};
  bool one_document_per_step = false;  // --batch and --accum must be 1
  bool gpu = false;                    // --device gpu
  // Whether the run's text is tokenized into RUN/tokens.bin (microgpt reads documents).
  bool token_file = true;
  int64_t param_bytes = 4;  // bytes per parameter and moment (f32; microgpt trains in f64)

  // The family's defaults over RunConfig's own (which are GPT-2's).
  void (*apply_defaults)(RunConfig& c) = nullptr;
  // Settings that follow from others unless given (`given`: the flags given, as run.json
  // names them; `resumed`: they are a stored run's); null where none do. GPT-2's shape comes
  // from --preset, field by field, and --seq-len from --block-size.
  void (*complete)(RunConfig& c, const nlohmann::ordered_json& given, bool resumed) = nullptr;
  // The checks of a fresh model's shape from the flags (--init-from brings its own); Errors
  // naming the flag.
  void (*check_fresh_model)(const RunConfig& c) = nullptr;
  // The model --init-from names, or a fresh one from the flags; an Error for a file it cannot
  // read (the disk estimate then takes the file's size).
  ModelSize (*model_size)(const RunConfig& c) = nullptr;
  // A fresh run's --tokenizer when none is given: "" for none (the run makes its own).
  // A default the user may not expect is noted on `log`.
  std::string (*default_tokenizer)(const RunConfig& c, std::FILE* log) = nullptr;
  // What the run's device cannot hold (--device gpu), refused before anything is written; null
  // where the family trains on the CPU only.
  void (*check_device)(const RunConfig& c) = nullptr;
  // The run itself, once the directory is prepared (run_session.h).
  RunSummary (*run)(const RunConfig& c, RunDir& dir, const RunRequest& request,
                    const std::optional<Checkpoint>& resume) = nullptr;
};

// The families a run can train, each under its --arch name, in the order help texts list them
// (the CLI's: families::trainable()).
class TrainFamilies {
 public:
  struct Entry {
    std::string_view name;
    const TrainFamily* family;
  };
  explicit TrainFamilies(std::vector<Entry> entries) : entries_(std::move(entries)) {}
  std::span<const Entry> entries() const { return entries_; }

  // The family named `arch`; a FlagError "--arch NAME: unknown (expected gpt2, evermind or
  // microgpt)" otherwise.
  const TrainFamily& find(std::string_view arch) const;

  // The names of the families `has` holds for, as a message lists them: "gpt2", "gpt2 or
  // evermind", "gpt2, evermind or microgpt".
  std::string names(bool (*has)(const TrainFamily&)) const;

  // Whether `family` takes `flag` (a name as run.json spells it): a flag that no family lists
  // (--lr, --steps, ...) applies to all; one that some family lists, only to those that list it.
  bool takes_flag(const TrainFamily& family, std::string_view flag) const;

  // Refuses (FlagError) a given flag that --arch `arch` does not take but another family does,
  // and a shape flag beside --init-from; `given`: the flags given, as run.json names them.
  void check_flags(std::string_view arch, const nlohmann::ordered_json& given) const;

 private:
  std::vector<Entry> entries_;
};

// Parameters, gradients and two optimizer moments, in f32: a fresh model's shape (`what`) is
// refused when they alone would not fit in this machine's memory, rather than failing in the
// allocator.
void check_fits_memory(const std::string& what, int64_t params);

}  // namespace tinylm::train
