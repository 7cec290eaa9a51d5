#include "tinylm/hub/progress.h"

#include "tinylm/core/error.h"

namespace tinylm::hub {

std::string bytes_text(double bytes) {
  static const char* kUnits[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

void Progress::start(const std::string& name, uint64_t total_bytes, uint64_t already_bytes) {
  name_ = name;
  total_ = total_bytes;
  resumed_at_ = done_ = already_bytes;
  started_ = drawn_ = std::chrono::steady_clock::now();
}

void Progress::advance(uint64_t bytes) {
  done_ += bytes;
  if (!out_ || !live_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - drawn_ < std::chrono::milliseconds(200)) return;
  drawn_ = now;
  std::fprintf(out_, "\r%s\033[K", line(false).c_str());
  std::fflush(out_);
  drawn_line_ = true;
}

void Progress::interrupt() {
  if (out_ && drawn_line_) std::fputc('\n', out_);
  drawn_line_ = false;
}

void Progress::finish() {
  if (!out_) return;
  std::fprintf(out_, "%s%s\n", drawn_line_ ? "\r\033[K" : "", line(true).c_str());
  std::fflush(out_);
  drawn_line_ = false;
}

void Progress::cached(const std::string& name, uint64_t bytes) {
  if (out_) std::fprintf(out_, "%s: %s, cached\n", name.c_str(), bytes_text(double(bytes)).c_str());
}

std::string Progress::line(bool done) const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double rate = seconds > 0 ? double(done_ - resumed_at_) / seconds : 0.0;
  const int percent = total_ ? static_cast<int>(100.0 * double(done_) / double(total_)) : 100;
  std::string s = name_ + ": ";
  s += done ? bytes_text(double(total_))
            : bytes_text(double(done_)) + " of " + bytes_text(double(total_));
  s += cat(", ", percent, "%, ", bytes_text(rate), "/s");
  if (done && resumed_at_ > 0) s += ", resumed at " + bytes_text(double(resumed_at_));
  return s;
}

}  // namespace tinylm::hub
