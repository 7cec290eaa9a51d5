#include "tinylm/train/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tinylm::train {

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string fit_to_columns(std::string_view line, int columns) {
  if (columns <= 0) return std::string(line);
  return std::string(line.substr(0, static_cast<size_t>(columns - 1)));
}

int terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const char* env = std::getenv("COLUMNS");
  if (env == nullptr) return 0;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  return end != env && *end == '\0' && n > 0 && n < 100000 ? static_cast<int>(n) : 0;
}

Progress::Progress(std::FILE* out, bool terminal, int64_t total_steps, int64_t every, int columns)
    : out_(out), terminal_(terminal), total_(total_steps), every_(every), columns_(columns) {}

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
  char line[256];
  std::snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.3g | %.0f tok/s%s | ETA %s%s",
                static_cast<long long>(r.step), static_cast<long long>(total_), r.loss, r.lr,
                tokens_per_s_, mfu_text, clock_text(eta).c_str(),
                r.skipped ? " | skipped (not finite)" : "");
  if (terminal_) {
    const int columns = columns_ > 0 ? columns_ : terminal_columns(::fileno(out_));
    std::fprintf(out_, "\r\033[K%s", fit_to_columns(line, columns).c_str());
  } else {
    std::fprintf(out_, "%s\n", line);
  }
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
