// tinylm plot: the train and validation loss of training runs against steps, as an SVG file.
#include <cstdio>
#include <map>
#include <span>

#include "cli_util.h"
#include "commands.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/report/plot.h"

namespace tinylm::cli {

void register_plot(CLI::App& app) {
  struct Flags {
    std::vector<std::string> runs;
    std::string out;
    report::PlotOptions plot;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw the train and validation loss of training runs against steps (SVG)");
  cmd->add_option("runs", f->runs, "Run directories (each with metrics.jsonl) or .jsonl files")
      ->required();
  cmd->add_option("--out", f->out, "The SVG file to write")->required();
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
    out.write(std::as_bytes(std::span(svg)));
    out.commit();
    std::fprintf(report_stream(f->out), "wrote %s: %zu run%s\n", f->out.c_str(), runs.size(),
                 runs.size() == 1 ? "" : "s");
  });
}

}  // namespace tinylm::cli
