#pragma once
// Loss curves of training runs: reading RUN/metrics.jsonl (docs: the run directory) and
// drawing train and validation loss against steps as a self-contained SVG figure. Reading
// and drawing are separate so that each is tested on its own.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::report {

struct LossPoint {
  int64_t step = 0;
  double loss = 0;
};

// One run's curves, each in increasing step order.
struct RunCurves {
  std::string name;              // the legend's label
  std::vector<LossPoint> train;  // "step" lines: "loss"
  std::vector<LossPoint> val;    // "eval" lines: "val_loss"
};

// Parses metrics.jsonl text; `what` names the file in errors ("what:17: not JSON"). Every
// line is a JSON object with a "type"; "step" and "eval" lines need an integer "step" >= 0
// and their loss key, whose null or non-finite value is skipped; other types are ignored, as
// are blank lines and an unterminated last line that is not JSON (a line being written). A
// step at or below the series' last one (a resume from an earlier checkpoint, or a restart)
// drops the earlier points from that step on: the later lines replace them.
RunCurves parse_run_metrics(std::string_view text, const std::string& what);

// Reads PATH/metrics.jsonl of a run directory, or PATH itself when it is a file. The name is
// the run directory's name (also for DIR/metrics.jsonl), or the stem of any other file. A
// missing or empty file is an Error naming it.
RunCurves read_run_metrics(const std::string& path);

struct PlotOptions {
  std::string title;              // empty: "Training and validation loss" (or "Training loss")
  int width = 960, height = 540;  // pixels, legend included; at least 480 x 300
  bool log_y = false;
  // Time constant in steps of the moving average drawn over the train loss (smooth_curve); 0:
  // none; < 0: automatic, about 1/100 of the step range, and only when the raw curves are noisy.
  double smooth_steps = -1;
};

// About `target` ticks at multiples of 1, 2 or 5 x 10^k within [lo, hi] (at least two when
// lo < hi); {lo} when lo == hi. `min_step` bounds the spacing from below (1 for steps).
std::vector<double> nice_ticks(double lo, double hi, int target, double min_step = 0);

// Ticks for a log axis over [lo, hi], 0 < lo <= hi: powers of ten, else 1-2-5 or 1..9 times
// powers of ten, whichever first gives three ticks, else nice_ticks (a range under a decade).
std::vector<double> log_ticks(double lo, double hi, int target);

// The train curve smoothed by a two-sided exponential moving average: each point becomes the
// mean of all points weighted by exp(-|step distance| / steps). Unlike the usual one-sided
// average it does not lag behind a falling curve (which would draw the train loss above the
// validation loss early on); at the ends it is one-sided.
std::vector<LossPoint> smooth_curve(std::span<const LossPoint> points, double steps);

// The figure: one colour per run (Okabe-Ito; past eight runs the colours repeat with dotted,
// then dash-dotted train lines), train loss as a line (thin and faint under its smoothed curve
// when noisy), validation loss as markers joined by a dashed line, the legend to the right.
// The y range covers every point, except on a linear axis where the first huge losses would
// squash the curves: when the full range is more than five times the range of the runs' later
// halves (from their lowest point to the 98th percentile of the later halves), the top comes
// down to five times that range, never below a validation point, and the legend says how many
// train points lie above. A log axis skips losses <= 0 (the legend counts them). Throws Error
// when there is no point to draw, or the figure is smaller than 480 x 300.
std::string render_loss_svg(std::span<const RunCurves> runs, const PlotOptions& options);

}  // namespace tinylm::report
