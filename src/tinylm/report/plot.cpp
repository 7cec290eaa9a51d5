#include "tinylm/report/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"

namespace tinylm::report {

// Drawing the figure; reading is in plot_data.cpp, ticks and smoothing in plot_scale.cpp.

namespace {

// Okabe & Ito's colour-blind-safe palette, most distinct on white first (yellow last).
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000", "#F0E442"};
constexpr double kFont = 12, kCharWidth = 7.2;  // an estimate for sans-serif at 12 px

// Text for XML: markup characters escaped; invalid UTF-8 and control characters, which XML
// does not allow (directory names may hold them), become U+FFFD.
std::string xml_text(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    size_t bad = s.size();
    if (is_valid_utf8(s, &bad)) bad = s.size();
    for (char c : s.substr(0, bad)) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
            out += "\uFFFD";
          } else {
            out += c;
          }
      }
    }
    if (bad < s.size()) out += "\uFFFD";
    s.remove_prefix(std::min(s.size(), bad + 1));
  }
  return out;
}

// At most n code points: the start and the end of s around an ellipsis.
std::string shorten(const std::string& s, size_t n) {
  const size_t len = code_points(s);
  if (len <= n || n < 5) return s;
  std::string out;
  const size_t head = (n - 1) / 2, tail = n - 1 - head;
  size_t cp = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool lead = !is_utf8_continuation(s[i]);
    if (lead) ++cp;
    if (cp <= head) out += s[i];
    if (cp == head + 1 && lead) out += "\u2026";
    if (cp > len - tail) out += s[i];
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Tick labels: as many decimals as the spacing needs, "k" for thousands of steps.
std::string tick_label(double v, double spacing) {
  char buf[32];
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(spacing) - 1e-9)));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string step_label(double v, bool thousands) {
  return thousands && v != 0 ? cat(std::llround(v / 1000), "k") : cat(std::llround(v));
}

// Maps data values to pixels along one axis.
struct Axis {
  double lo, hi;
  bool log;
  double px_lo, px_hi;
  double t(double v) const { return log ? std::log10(v) : v; }
  double operator()(double v) const {
    return px_lo + (t(v) - t(lo)) / (t(hi) - t(lo)) * (px_hi - px_lo);
  }
};

// 1, 2 or 5 x 10^k nearest x from above.
double nice_number(double x) {
  const double mag = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= x * (1 - 1e-9)) return m * mag;
  }
  return 10 * mag;
}

double quantile(std::vector<double> v, double q) {
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

struct YRange {
  double lo, hi;
  size_t clipped = 0;  // train points above hi
};

// The y range: all points, or on a linear axis, a top lowered so that the later halves of the
// curves fill at least 1/kTailShare of the height (see the header).
constexpr double kTailShare = 5;
YRange y_range(std::span<const RunCurves> runs, bool log_y) {
  std::vector<double> all, tail;
  double val_max = -INFINITY;
  for (const RunCurves& r : runs) {
    for (const auto* series : {&r.train, &r.val}) {
      if (series->empty()) continue;
      const double mid = 0.5 * static_cast<double>(series->front().step + series->back().step);
      for (const LossPoint& p : *series) {
        if (log_y && p.loss <= 0) continue;
        all.push_back(p.loss);
        if (static_cast<double>(p.step) >= mid) tail.push_back(p.loss);
        if (series == &r.val) val_max = std::max(val_max, p.loss);
      }
    }
  }
  const auto [lo_it, hi_it] = std::minmax_element(all.begin(), all.end());
  YRange y{*lo_it, *hi_it};
  if (log_y) {
    const double pad = std::max(0.04 * std::log10(y.hi / y.lo), 0.02);
    return {y.lo / std::pow(10.0, pad), y.hi * std::pow(10.0, pad)};
  }
  // The tail's 98th percentile, so a late spike does not count as the tail's range.
  const double tail_hi = quantile(tail, 0.98);
  if (y.hi - y.lo > kTailShare * (tail_hi - y.lo)) {
    y.hi = std::max(y.lo + kTailShare * (tail_hi - y.lo), val_max);
  }
  const double span = y.hi > y.lo ? y.hi - y.lo : std::max(0.1 * std::abs(y.lo), 0.1);
  y.lo = y.lo >= 0 ? std::max(0.0, y.lo - 0.04 * span) : y.lo - 0.04 * span;
  y.hi += 0.04 * span;
  for (const RunCurves& r : runs) {
    y.clipped += static_cast<size_t>(std::count_if(
        r.train.begin(), r.train.end(), [&](const LossPoint& p) { return p.loss > y.hi; }));
  }
  return y;
}

// Pixel coordinates of a series; far more points than pixel columns are reduced to each
// column's first, lowest, highest and last point, which draws the same band.
std::vector<std::pair<double, double>> to_pixels(const std::vector<LossPoint>& points,
                                                 const Axis& x, const Axis& y, double width) {
  std::vector<std::pair<double, double>> px;
  const double limit = 20 * (std::abs(y.px_hi - y.px_lo) + 100);  // keeps numbers printable
  for (const LossPoint& p : points) {
    if (y.log && p.loss <= 0) continue;
    px.emplace_back(x(static_cast<double>(p.step)), std::clamp(y(p.loss), -limit, limit));
  }
  if (px.size() <= 4 * static_cast<size_t>(width)) return px;
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < px.size();) {
    size_t j = i, lo = i, hi = i;
    for (; j < px.size() && std::floor(px[j].first) == std::floor(px[i].first); ++j) {
      if (px[j].second < px[lo].second) lo = j;
      if (px[j].second > px[hi].second) hi = j;
    }
    for (size_t k : {i, std::min(lo, hi), std::max(lo, hi), j - 1}) {
      if (out.empty() || out.back() != px[k]) out.push_back(px[k]);
    }
    i = j;
  }
  return out;
}

std::string polyline(const std::vector<std::pair<double, double>>& px, const std::string& style) {
  std::string s = "<polyline fill=\"none\" " + style + " points=\"";
  for (size_t i = 0; i < px.size(); ++i) {
    if (i > 0) s += ' ';
    s += num(px[i].first);
    s += ',';
    s += num(px[i].second);
  }
  return s + "\"/>\n";
}

std::string circle(double x, double y, double r, const std::string& style) {
  return "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\" " + style +
         "/>\n";
}

std::string text(double x, double y, const std::string& body, const std::string& attrs = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attrs.empty() ? "" : " ") + attrs +
         ">" + body + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& style) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" " + style + "/>\n";
}

// Whether a train curve jitters by more than about a pixel from point to point: the median of
// its second differences, in pixels, which a smooth decay keeps near zero.
bool is_noisy(const std::vector<LossPoint>& points, const Axis& y) {
  if (points.size() < 10) return false;
  std::vector<double> d;
  for (size_t i = 1; i + 1 < points.size(); ++i) {
    if (y.log && (points[i - 1].loss <= 0 || points[i].loss <= 0 || points[i + 1].loss <= 0)) {
      continue;
    }
    d.push_back(std::abs(y(points[i - 1].loss) - 2 * y(points[i].loss) + y(points[i + 1].loss)));
  }
  return !d.empty() && quantile(d, 0.5) > 2.0;
}

// Run i's colour; past the palette's eight colours its train line is dotted, then dash-dotted.
std::string run_stroke(size_t i, bool train) {
  static constexpr const char* kDashes[] = {"", "1 3", "8 3 1 3"};
  const char* dash = train ? kDashes[std::min<size_t>(i / std::size(kColours), 2)] : "5 3";
  return cat("stroke=\"", kColours[i % std::size(kColours)], "\"",
             *dash ? cat(" stroke-dasharray=\"", dash, "\"") : "");
}

// The plot area, its axes and their ticks.
struct Frame {
  double left, right, top, bottom;
  Axis x, y;
  std::vector<double> xt, yt;
  std::vector<std::string> x_labels, y_labels;
};

Frame make_frame(double x_lo, double x_hi, const YRange& yr, const PlotOptions& o,
                 double legend_w) {
  Frame f;
  f.top = 44;
  f.bottom = o.height - 48.0;
  f.right = o.width - legend_w - 16;
  f.y = {yr.lo, yr.hi, o.log_y, f.bottom, f.top};
  const int y_target = std::max(3, static_cast<int>((f.bottom - f.top) / 55));
  f.yt = o.log_y ? log_ticks(yr.lo, yr.hi, y_target) : nice_ticks(yr.lo, yr.hi, y_target);
  const double spacing = f.yt.size() > 1 ? f.yt[1] - f.yt[0] : 1;
  size_t chars = 1;
  for (double v : f.yt) {
    // Log ticks span decades, so each is labelled by its own digits ("0.5", "1", "20").
    f.y_labels.push_back(o.log_y ? cat(v) : tick_label(v, spacing));
    chars = std::max(chars, f.y_labels.back().size());
  }
  f.left = 36 + kCharWidth * static_cast<double>(chars);  // room for the widest label
  f.x = {x_lo, x_hi, false, f.left, f.right};
  f.xt = nice_ticks(x_lo, x_hi, std::max(2, static_cast<int>((f.right - f.left) / 70)), 1);
  const bool thousands =
      f.xt.back() >= 10000 &&
      std::all_of(f.xt.begin(), f.xt.end(), [](double v) { return std::fmod(v, 1000) == 0; });
  for (double v : f.xt) f.x_labels.push_back(step_label(v, thousands));
  return f;
}

std::string draw_axes(const Frame& f, const PlotOptions& o) {
  std::string s = "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  for (double v : f.xt) s += line(f.x(v), f.top, f.x(v), f.bottom, "");
  for (double v : f.yt) s += line(f.left, f.y(v), f.right, f.y(v), "");
  s += "</g>\n<g stroke=\"#444\" stroke-width=\"1\">\n";
  s += line(f.left, f.bottom, f.right, f.bottom, "") + line(f.left, f.top, f.left, f.bottom, "");
  for (double v : f.xt) s += line(f.x(v), f.bottom, f.x(v), f.bottom + 5, "");
  for (double v : f.yt) s += line(f.left - 5, f.y(v), f.left, f.y(v), "");
  s += "</g>\n<g fill=\"#333\">\n";
  for (size_t i = 0; i < f.xt.size(); ++i) {
    s += text(f.x(f.xt[i]), f.bottom + 19, f.x_labels[i], "text-anchor=\"middle\"");
  }
  for (size_t i = 0; i < f.yt.size(); ++i) {
    s += text(f.left - 8, f.y(f.yt[i]) + 4, f.y_labels[i], "text-anchor=\"end\"");
  }
  s += text((f.left + f.right) / 2, o.height - 10.0, "step",
            "text-anchor=\"middle\" font-size=\"13\"");
  s += text(0, 0, o.log_y ? "loss (log scale)" : "loss",
            "text-anchor=\"middle\" font-size=\"13\" transform=\"translate(16," +
                num((f.top + f.bottom) / 2) + ") rotate(-90)\"");
  return s + "</g>\n";
}

constexpr double kMarker = 3.5;  // validation marker radius

std::string raw_style(bool smoothed) {
  return smoothed ? "stroke-width=\"1\" stroke-opacity=\"0.3\"" : "stroke-width=\"1.5\"";
}

// The curves, layer by layer across runs so that validation markers stay on top. They are
// clipped to the plot area, with room at the sides for the end markers.
std::string draw_curves(std::span<const RunCurves> runs, const Frame& f, double smooth) {
  const std::string rect = "<rect x=\"" + num(f.left - 6) + "\" y=\"" + num(f.top) + "\" width=\"" +
                           num(f.right - f.left + 12) + "\" height=\"" + num(f.bottom - f.top) +
                           "\"/>";
  // Figures inlined into one HTML page share ids: name the clip after its rectangle, so that
  // whichever of two same-named clips is used, it is the same.
  const std::string id = cat("tinylm-plot-", std::hash<std::string>{}(rect) % 1000000);
  std::string s = "<defs><clipPath id=\"" + id + "\">" + rect + "</clipPath></defs>\n";
  s += "<g clip-path=\"url(#" + id + ")\" fill=\"none\" stroke-linejoin=\"round\">\n";
  const double w = f.right - f.left;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto px = to_pixels(runs[i].train, f.x, f.y, w);
    if (!px.empty()) s += polyline(px, run_stroke(i, true) + " " + raw_style(smooth > 0));
    if (px.size() == 1) {  // a line of one point draws nothing
      s += circle(px[0].first, px[0].second, 2.5,
                  cat("fill=\"", kColours[i % std::size(kColours)], "\""));
    }
  }
  for (size_t i = 0; smooth > 0 && i < runs.size(); ++i) {
    if (runs[i].train.size() < 2) continue;
    const auto px = to_pixels(smooth_curve(runs[i].train, smooth), f.x, f.y, w);
    s += polyline(px, run_stroke(i, true) + " stroke-width=\"2\"");
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto px = to_pixels(runs[i].val, f.x, f.y, w);
    if (px.empty()) continue;
    s += polyline(px, run_stroke(i, false) + " stroke-width=\"1.5\"");
    const std::string fill =
        cat("fill=\"", kColours[i % std::size(kColours)], "\" stroke=\"white\" stroke-width=\"1\"");
    for (const auto& [x, y] : px) s += circle(x, y, kMarker, fill);
  }
  return s + "</g>\n";
}

// The legend, right of the plot: runs by colour, the series by line style, then notes.
std::string draw_legend(std::span<const RunCurves> runs, double lx, double ly, size_t chars,
                        double smooth, bool any_val, const std::vector<std::string>& notes) {
  std::string s = "<g fill=\"#333\">\n";
  for (size_t i = 0; i < runs.size(); ++i, ly += 20) {
    const RunCurves& r = runs[i];
    const bool empty = r.train.empty() && r.val.empty();
    s += line(lx, ly, lx + 24, ly, run_stroke(i, true) + " stroke-width=\"3\"");
    // The whole name as a tooltip where it had to be shortened.
    s += "<text x=\"" + num(lx + 32) + "\" y=\"" + num(ly + 4) + "\"" +
         (empty ? " fill=\"#888\"" : "") + "><title>" + xml_text(r.name) + "</title>" +
         xml_text(shorten(r.name, chars - (empty ? 10 : 0))) + (empty ? " (no data)" : "") +
         "</text>\n";
  }
  ly += 12;
  const std::string key = "stroke=\"#555\" ";
  s += line(lx, ly, lx + 24, ly, key + raw_style(smooth > 0));
  s += text(lx + 32, ly + 4, smooth > 0 ? "train, raw" : "train");
  ly += 20;
  if (smooth > 0) {
    s += line(lx, ly, lx + 24, ly, key + "stroke-width=\"2\"");
    s += text(lx + 32, ly + 4, "train, smoothed");
    ly += 20;
  }
  if (any_val) {
    s += line(lx, ly, lx + 24, ly, key + "stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
    s += circle(lx + 12, ly, kMarker, "fill=\"#555\" stroke=\"white\" stroke-width=\"1\"");
    s += text(lx + 32, ly + 4, "val");
    ly += 20;
  }
  ly += 6;
  for (const std::string& note : notes) {
    s += text(lx, ly + 4, xml_text(note), "fill=\"#666\" font-size=\"11\"");
    ly += 16;
  }
  return s + "</g>\n";
}

}  // namespace

std::string render_loss_svg(std::span<const RunCurves> runs, const PlotOptions& o) {
  check(o.width >= 480 && o.height >= 300, "plot: the figure must be at least 480 x 300 pixels");
  bool any_val = false, any_point = false;
  double x_lo = INFINITY, x_hi = -INFINITY;
  size_t non_positive = 0;  // not drawn on a log axis
  for (const RunCurves& r : runs) {
    for (const auto* series : {&r.train, &r.val}) {
      for (const LossPoint& p : *series) {
        if (o.log_y && p.loss <= 0) {
          ++non_positive;
          continue;
        }
        any_point = true;
        any_val = any_val || series == &r.val;
        x_lo = std::min(x_lo, static_cast<double>(p.step));
        x_hi = std::max(x_hi, static_cast<double>(p.step));
      }
    }
  }
  if (!any_point) {
    std::string names;
    for (const RunCurves& r : runs) names += (names.empty() ? "" : ", ") + r.name;
    fail("plot: no loss to draw in ", names.empty() ? "no runs" : names,
         o.log_y ? " (a log axis needs losses > 0)" : "");
  }
  // Steps from 0 unless the runs start well into training (a resumed run's log, say); a
  // single step in the middle of a range of two.
  if (x_lo <= 0.1 * x_hi) x_lo = 0;
  if (x_hi - x_lo < 2) {
    x_lo = std::max(0.0, (x_lo + x_hi) / 2 - 1);
    x_hi = x_lo + 2;
  }
  const YRange yr = y_range(runs, o.log_y);

  // The legend's width: the longest run name, at most a third of the figure, at least the
  // notes' 20 characters.
  const auto max_chars = static_cast<size_t>((o.width / 3.0 - 44) / kCharWidth);
  size_t chars = 20;
  for (const RunCurves& r : runs) chars = std::max(chars, code_points(r.name));
  chars = std::min(chars, max_chars);
  const Frame f = make_frame(x_lo, x_hi, yr, o, 44 + kCharWidth * static_cast<double>(chars));

  // Smoothing: asked for, or automatic when some curve is noisy at this scale.
  double smooth = o.smooth_steps;
  if (smooth < 0) {
    const bool noisy = std::any_of(runs.begin(), runs.end(),
                                   [&](const RunCurves& r) { return is_noisy(r.train, f.y); });
    smooth = noisy ? std::max(1.0, nice_number((x_hi - x_lo) / 100)) : 0;
  }
  std::vector<std::string> notes;
  if (smooth > 0) notes.push_back(cat("smoothing: ", smooth, smooth == 1 ? " step" : " steps"));
  if (yr.clipped > 0) {
    notes.push_back(cat(yr.clipped, yr.clipped == 1 ? " train point" : " train points"));
    const double spacing = f.yt.size() > 1 ? f.yt[1] - f.yt[0] : 1;
    notes.push_back(cat("above ", tick_label(yr.hi, spacing / 10), " not shown"));
  }
  if (non_positive > 0) {
    notes.push_back(cat(non_positive, non_positive == 1 ? " loss <= 0" : " losses <= 0"));
    notes.push_back("not shown (log axis)");
  }

  const std::string title =
      o.title.empty() ? (any_val ? "Training and validation loss" : "Training loss") : o.title;
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", o.width, "\" height=\"", o.height,
           "\" viewBox=\"0 0 ", o.width, " ", o.height,
           "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"", kFont,
           "\">\n");
  s += "<title>" + xml_text(title) + "</title>\n";
  s += cat("<rect width=\"", o.width, "\" height=\"", o.height, "\" fill=\"white\"/>\n");
  s += text((f.left + f.right) / 2, 26, xml_text(title),
            "text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\"");
  s += draw_axes(f, o);
  s += draw_curves(runs, f, smooth);
  s += draw_legend(runs, f.right + 24, f.top + 6, chars, smooth, any_val, notes);
  return s + "</svg>\n";
}

}  // namespace tinylm::report
