// Axis ticks and curve smoothing for loss plots (plot.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/report/plot.h"

namespace tinylm::report {

std::vector<double> nice_ticks(double lo, double hi, int target, double min_step) {
  if (!(hi > lo)) return {lo};
  // Candidate spacings m x 10^e (m = 1, 2, 5) around (hi - lo) / target; keep the one whose
  // tick count is closest to the target among those giving at least two ticks.
  const int e0 = static_cast<int>(std::floor(std::log10((hi - lo) / std::max(target, 1))));
  std::vector<double> best;
  for (int e = e0 - 1; e <= e0 + 1; ++e) {
    const double scale = std::pow(10.0, std::abs(e));  // exact up to 10^22
    for (double m : {1.0, 2.0, 5.0}) {
      const double step = e < 0 ? m / scale : m * scale;
      if (step < min_step) continue;
      // k * m / 10^-e rounds once, so 19 x 0.2 is the double nearest 3.8, not 3.8000000000000003.
      const auto tick = [&](double k) { return (e < 0 ? k * m / scale : k * m * scale) + 0.0; };
      std::vector<double> ticks;
      for (double k = std::ceil(lo / step - 1e-9); tick(k) <= hi + 1e-9 * step; k += 1) {
        ticks.push_back(tick(k));  // + 0.0 above: no "-0"
        if (ticks.size() > 1000) break;
      }
      if (ticks.size() < 2) continue;
      const auto miss = [&](size_t n) { return std::abs(static_cast<double>(n) - target); };
      if (best.empty() || miss(ticks.size()) < miss(best.size())) best = std::move(ticks);
    }
  }
  // A range narrower than min_step: whatever multiple of min_step lies in it.
  if (best.empty() && min_step > 0) {
    const double k = std::ceil(lo / min_step) * min_step;
    return {k <= hi ? k : lo};
  }
  return best;
}

std::vector<double> log_ticks(double lo, double hi, int target) {
  const std::vector<std::vector<double>> mantissas = {{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (const auto& ms : mantissas) {
    std::vector<double> ticks;
    for (int e = static_cast<int>(std::floor(std::log10(lo))) - 1;
         e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
      for (double m : ms) {
        // m * 10^e through the decimal string, so 0.3 is the double nearest 0.3.
        const double v = std::stod(cat(m, "e", e));
        if (v >= lo * (1 - 1e-12) && v <= hi * (1 + 1e-12)) ticks.push_back(v);
      }
    }
    if (ticks.size() >= 3) return ticks;
  }
  return nice_ticks(lo, hi, target);
}

std::vector<LossPoint> smooth_curve(std::span<const LossPoint> points, double steps) {
  std::vector<LossPoint> out(points.begin(), points.end());
  if (!(steps > 0) || points.size() < 2) return out;
  // Sums of weight * loss and of weight over the points up to i (forward) and from i on
  // (backward), each point weighing 1 in both; their union counts point i twice.
  const size_t n = points.size();
  std::vector<double> f_num(n), f_den(n), b_num(n), b_den(n);
  const auto decay = [&](size_t i) {  // from point i - 1 to point i
    return std::exp(-static_cast<double>(points[i].step - points[i - 1].step) / steps);
  };
  for (size_t i = 0; i < n; ++i) {
    const double d = i > 0 ? decay(i) : 0;
    f_num[i] = points[i].loss + (i > 0 ? d * f_num[i - 1] : 0);
    f_den[i] = 1 + (i > 0 ? d * f_den[i - 1] : 0);
  }
  for (size_t i = n; i-- > 0;) {
    const double d = i + 1 < n ? decay(i + 1) : 0;
    b_num[i] = points[i].loss + (i + 1 < n ? d * b_num[i + 1] : 0);
    b_den[i] = 1 + (i + 1 < n ? d * b_den[i + 1] : 0);
  }
  for (size_t i = 0; i < n; ++i) {
    out[i].loss = (f_num[i] + b_num[i] - points[i].loss) / (f_den[i] + b_den[i] - 1);
  }
  return out;
}
}  // namespace tinylm::report
