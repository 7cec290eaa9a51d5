#pragma once
// The run as a person watches it, on stderr: on a terminal one line rewritten in place
// (step/total, loss, learning rate, tokens/s, MFU when the peak is known, ETA); when piped,
// a plain line every `every` steps. Evaluations and checkpoints get lines of their own.
#include <cstdio>
#include <optional>

#include "tinylm/train/loop.h"

namespace tinylm::train {

class Progress {
 public:
  Progress(std::FILE* out, bool terminal, int64_t total_steps, int64_t every);

  void step(const StepRecord& r, std::optional<double> mfu);
  void eval(const EvalRecord& e);
  void note(const std::string& line);  // a line of its own (checkpoint written, ...)
  void finish();                       // ends the in-place line

 private:
  std::FILE* out_;
  bool terminal_;
  int64_t total_, every_;
  bool open_line_ = false;
  double tokens_per_s_ = 0.0;  // smoothed
  int64_t first_step_ = -1;
  double first_elapsed_ = 0.0;
};

// h:mm:ss
std::string clock_text(double seconds);

}  // namespace tinylm::train
