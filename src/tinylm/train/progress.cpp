#include "tinylm/train/progress.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tinylm::train {

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

Progress::Progress(std::FILE* out, bool terminal, int64_t total_steps, int64_t every)
    : out_(out), terminal_(terminal), total_(total_steps), every_(every) {}

void Progress::step(const StepRecord& r, std::optional<double> mfu) {
  const double rate = r.step_s > 0 ? static_cast<double>(r.step_tokens) / r.step_s : 0.0;
  tokens_per_s_ = tokens_per_s_ == 0.0 ? rate : 0.9 * tokens_per_s_ + 0.1 * rate;
  if (first_step_ < 0) {
    first_step_ = r.step - 1;
    first_elapsed_ = r.elapsed_s - r.step_s;
  }
  if (!terminal_ && r.step % every_ != 0 && r.step != total_) return;
  // ETA from this session's average pace (evaluations included), not one noisy step.
  const double done = static_cast<double>(r.step - first_step_);
  const double per_step = (r.elapsed_s - first_elapsed_) / std::max(1.0, done);
  const double eta = per_step * static_cast<double>(total_ - r.step);
  char mfu_text[32] = "";
  if (mfu) std::snprintf(mfu_text, sizeof mfu_text, " | MFU %.0f%%", 100.0 * *mfu);
  std::fprintf(out_, "%sstep %lld/%lld | loss %.4f | lr %.3g | %.0f tok/s%s | ETA %s%s%s",
               terminal_ ? "\r\033[K" : "", static_cast<long long>(r.step),
               static_cast<long long>(total_), r.loss, r.lr, tokens_per_s_, mfu_text,
               clock_text(eta).c_str(), r.skipped ? " | skipped (not finite)" : "",
               terminal_ ? "" : "\n");
  std::fflush(out_);
  open_line_ = terminal_;
}

void Progress::eval(const EvalRecord& e) {
  char line[128];
  std::snprintf(line, sizeof line, "step %lld: val loss %.4f (best %.4f)",
                static_cast<long long>(e.step), e.val_loss, e.best_val_loss);
  note(line);
}

void Progress::note(const std::string& line) {
  finish();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (open_line_) std::fputc('\n', out_);
  open_line_ = false;
}

}  // namespace tinylm::train
