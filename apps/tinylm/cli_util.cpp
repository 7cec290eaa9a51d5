#include "cli_util.h"

#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/io/output_target.h"
#include "tinylm/io/text_file.h"
#include "tinylm/train/progress.h"

namespace tinylm::cli {

namespace fs = std::filesystem;

namespace {
// The bundled folder's file `name` (folder "data": installed as share/tinylm itself; "configs":
// as share/tinylm/configs).
std::string bundled_path(const std::string& folder, const std::string& name) {
  const fs::path installed = folder == "data" ? fs::path() : fs::path(folder);
  std::vector<fs::path> places = {fs::path(folder)};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) places.push_back(exe.parent_path().parent_path() / "share/tinylm" / installed);
  places.push_back(fs::path(TINYLM_SOURCE_DATA_DIR).parent_path() / folder);
  std::string tried;
  for (const fs::path& p : places) {
    if (fs::exists(p / name, ec)) return (p / name).string();
    tried += (tried.empty() ? "" : ", ") + (p / name).string();
  }
  fail("no bundled ", name, " (tried ", tried, ")");
}
}  // namespace

std::string bundled_data_path(const std::string& name) { return bundled_path("data", name); }

std::string resolve_data_path(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (path.empty() || fs::exists(p, ec) || p.is_absolute()) return path;
  auto it = p.begin();
  if (it == p.end() || (*it != "data" && *it != "configs") || std::next(it) == p.end()) return path;
  const std::string folder = it->string();
  fs::path rest;
  for (++it; it != p.end(); ++it) rest /= *it;
  try {
    return bundled_path(folder, rest.string());
  } catch (const Error&) {
    return path;
  }
}

std::string read_text_input(const std::string& path) {
  return path == "-" ? io::read_stdin(io::kMaxTextBytes) : io::read_file(path, io::kMaxTextBytes);
}

std::FILE* report_stream(const std::string& out) {
  return io::output_mode(out) == io::OutputMode::stream ? stderr : stdout;
}

bool stdin_is_piped() { return ::isatty(STDIN_FILENO) == 0; }

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) != 0; }

TerminalProgress::TerminalProgress(std::string label, std::string unit, double scale, bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      scale_(scale),
      terminal_(enabled && ::isatty(STDERR_FILENO) != 0) {}

TerminalProgress::~TerminalProgress() { finish(); }

namespace {
std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}
}  // namespace

void TerminalProgress::update(int64_t done, int64_t total) {
  if (!terminal_) return;
  const double ms = timer_.elapsed_ms();
  if (ms - last_ms_ < 200 && done < total) return;
  last_ms_ = ms;
  const double rate = ms > 0 ? done * 1000.0 / ms : 0.0;
  const std::string eta =
      rate > 0 && total > done ? train::clock_text((total - done) / rate) : std::string("-");
  const std::string line = scale_ == 1.0
                               ? cat(label_, " ", done, "/", total, " ", unit_, ", ",
                                     static_cast<int64_t>(rate + 0.5), " ", unit_, "/s, ETA ", eta)
                               : cat(label_, " ", fixed1(static_cast<double>(done) / scale_), "/",
                                     fixed1(static_cast<double>(total) / scale_), " ", unit_, ", ",
                                     fixed1(rate / scale_), " ", unit_, "/s, ETA ", eta);
  // Cut to the terminal's width: a line that wraps is no longer rewritten in place.
  const std::string fitted = train::fit_to_columns(line, train::terminal_columns(STDERR_FILENO));
  std::fprintf(stderr, "\r\033[K%s", fitted.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void TerminalProgress::finish() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace tinylm::cli
