// tinylm plot: the train and validation loss of training runs against steps, as an SVG file or,
// for --out FIG.png, a PNG image of it.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/report/plot.h"
#include "tinylm/report/png.h"

namespace tinylm::cli {

namespace {

// --out's extension decides the format: .png a PNG, .svg or none (/dev/stdout, a pipe) an SVG;
// any other is refused rather than written as SVG under a misleading name.
bool wants_png(const std::string& out) {
  std::string ext = std::filesystem::path(out).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".png") return true;
  if (ext.empty() || ext == ".svg") return false;
  throw UsageError("--out " + out + ": unknown image type " + ext + " (use .svg or .png)");
}

}  // namespace

void register_plot(CLI::App& app) {
  struct Flags {
    std::vector<std::string> runs;
    std::string out;
    report::PlotOptions plot;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw the train and validation loss of training runs against steps (SVG or PNG)");
  cmd->add_option("runs", f->runs, "Run directories (each with metrics.jsonl) or .jsonl files")
      ->required();
  cmd->add_option("--out", f->out, "The figure to write: FILE.svg, or FILE.png for a PNG image")
      ->required();
  cmd->add_option("--title", f->plot.title,
                  "Figure title (default: \"Training and validation loss\")");
  cmd->add_flag("--log-y", f->plot.log_y, "Logarithmic loss axis");
  cmd->add_option("--width", f->plot.width, "Figure width in pixels")
      ->capture_default_str()
      ->check(CLI::Range(480, 10000));
  cmd->add_option("--height", f->plot.height, "Figure height in pixels")
      ->capture_default_str()
      ->check(CLI::Range(300, 10000));
  cmd->add_option("--smooth", f->plot.smooth_steps,
                  "Moving-average time constant in steps for the train loss (0: none; default: "
                  "about 1/100 of the steps, when the curves are noisy)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([f] {
    const bool png = wants_png(f->out);
    io::probe_output(f->out);  // before the runs are read
    std::vector<report::RunCurves> runs;
    for (const std::string& path : f->runs) runs.push_back(report::read_run_metrics(path));
    // Runs that share a directory name (a/run, b/run) are told apart by the paths as given.
    std::map<std::string, int> uses;
    for (const auto& r : runs) ++uses[r.name];
    for (size_t i = 0; i < runs.size(); ++i) {
      if (uses[runs[i].name] > 1) runs[i].name = f->runs[i];
    }
    const std::string svg = report::render_loss_svg(runs, f->plot);
    io::AtomicFile out(f->out);
    if (png)
      out.write(report::render_svg_png(svg, f->plot.width, f->plot.height));
    else
      out.write(std::as_bytes(std::span(svg)));
    out.commit();
    std::fprintf(report_stream(f->out), "wrote %s: %zu run%s\n", f->out.c_str(), runs.size(),
                 runs.size() == 1 ? "" : "s");
  });
}

}  // namespace tinylm::cli
