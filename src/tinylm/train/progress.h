#pragma once
// The run as a person watches it, on stderr: on a terminal one line rewritten in place
// (step/total, loss, learning rate, tokens/s, MFU when the peak is known, ETA); when piped,
// a plain line every `every` steps. Evaluations and checkpoints get lines of their own.
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "tinylm/train/loop.h"

namespace tinylm::train {

class Progress {
 public:
  // columns: the terminal's width for the in-place line; 0 asks `out`'s terminal at each step
  // (it may be resized), as terminal_columns does.
  Progress(std::FILE* out, bool terminal, int64_t total_steps, int64_t every, int columns = 0);

  void step(const StepRecord& r, std::optional<double> mfu);
  void eval(const EvalRecord& e);
  void note(const std::string& line);  // a line of its own (checkpoint written, ...)
  void finish();                       // ends the in-place line

 private:
  std::FILE* out_;
  bool terminal_;
  int64_t total_, every_;
  int columns_;
  bool open_line_ = false;
  double tokens_per_s_ = 0.0;  // smoothed
  int64_t first_step_ = -1;
  double first_elapsed_ = 0.0;
};

// h:mm:ss
std::string clock_text(double seconds);

// The in-place line cut to at most columns - 1 characters (it is ASCII: one column each), so
// it never fills the last column: a line that wraps is no longer rewritten in place by \r, and
// the terminal fills with copies. columns <= 0 (unknown): the line as it is.
std::string fit_to_columns(std::string_view line, int columns);

// The width of the terminal `fd` is (TIOCGWINSZ), else $COLUMNS when it is a positive number,
// else 0 (unknown).
int terminal_columns(int fd);

}  // namespace tinylm::train
