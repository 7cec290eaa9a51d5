#pragma once
// What every subcommand shares beyond its flags: the exit-code scheme (docs/cli.md), the
// bundled data files, the progress line on a terminal, and reading text from a file or stdin.
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "tinylm/core/timer.h"

namespace tinylm::cli {

// Exit codes, the same for every command (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;  // a file, a model, the data or the machine failed
inline constexpr int kExitUsage = 2;    // the command line is wrong; nothing was done
// Training stopped by SIGINT / SIGTERM (128 + the signal, as shells report it) after it saved
// a checkpoint.
inline constexpr int kExitInterrupted = 130;
inline constexpr int kExitTerminated = 143;

// What the training commands' --help says of their bits across kernel levels (README).
inline constexpr const char* kGpt2TrainingLevelsNote =
    "GPT-2 training multiplies with oneDNN, whose sums differ between kernel levels in the last\n"
    "bits: the same flags repeat their bytes on the same level, but losses and checkpoints can\n"
    "differ in their last digits between TINYLM_ISA=avx2 and avx512 (inference gives the same\n"
    "bits at every level).";

// A wrong command line found by a command's own checks (flag values that conflict, ...):
// main prints it as one line and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Ends the command with this exit code after it has printed what it had to say.
struct ExitRequest {
  int code;
};

// The bundled data directory's file `name` (e.g. "names.txt", "gpt2"): ./data (a checkout),
// <prefix>/share/tinylm beside an installed binary, or the source tree the binary was built
// from. Throws, naming the places tried, when none has it.
std::string bundled_data_path(const std::string& name);

// `path` itself when it exists; a missing relative "data/X" is the bundled X, and "configs/X"
// the shipped training configuration X (so the README's examples work from any directory);
// anything else as given (its reader names it).
std::string resolve_data_path(const std::string& path);

// Reads all of `path`, or stdin when path is "-": a text, at most io::kMaxTextBytes, from a
// regular file or a pipe (io::read_file's rules).
std::string read_text_input(const std::string& path);

// Where a command's "wrote OUT" line goes: stdout, or stderr when OUT is written in place
// (/dev/stdout, a pipe, a device: io/output_target.h), so the line never lands in the output.
std::FILE* report_stream(const std::string& out);

// True when stdin is not a terminal (something is piped or redirected in).
bool stdin_is_piped();

// True when stdout is a terminal (the command's output shows as it is written).
bool stdout_is_terminal();

// One line on stderr rewritten in place, on a terminal only: "label done/total unit, rate
// unit/s, ETA h:mm:ss". Piped, it prints nothing at all. At most a few updates a second.
// With a scale, counts are shown divided by it with one decimal (scale 1e6, unit "MB": bytes
// as "3.1/10.5 MB, 1.2 MB/s"). enabled = false: nothing even on a terminal (the command's own
// output is already on it, say).
class TerminalProgress {
 public:
  TerminalProgress(std::string label, std::string unit, double scale = 1.0, bool enabled = true);
  ~TerminalProgress();
  void update(int64_t done, int64_t total);
  void finish();  // clears the line

 private:
  std::string label_, unit_;
  double scale_;
  bool terminal_;
  bool shown_ = false;
  Timer timer_;
  double last_ms_ = -1e9;
};

}  // namespace tinylm::cli
