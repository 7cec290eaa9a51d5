#pragma once
// The one central-difference gradient check of the suite: kernels' double backwards (the ops
// table), whole models (GPT-2, EvermindLM, microgpt) against their own losses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace tinylm::test {

// (f(v + h e_i) - f(v - h e_i)) / 2h; v[i] is restored.
inline double central_difference(const std::function<double()>& f, std::span<double> v, size_t i,
                                 double h = 1e-5) {
  const double saved = v[i];
  v[i] = saved + h;
  const double up = f();
  v[i] = saved - h;
  const double down = f();
  v[i] = saved;
  return (up - down) / (2 * h);
}

// |analytic[i] - numeric[i]| <= abs + rel |numeric[i]| + of_max max(max_floor, max_j |numeric[j]|)
// for every checked i.
struct GradientTolerance {
  double abs = 0;
  double rel = 0;
  double of_max = 0;
  double max_floor = 0;
};

// Which elements: i = begin, begin + stride, ... below end (end clamped to v's size); h is the
// difference step.
struct GradientSpan {
  size_t begin = 0;
  size_t end = std::numeric_limits<size_t>::max();
  size_t stride = 1;
  double h = 1e-5;
};

struct GradientReport {
  size_t checked = 0;
  size_t worst_index = 0;  // the element with the largest error relative to its bound
  double worst_ratio = 0;  // that error over its bound (passes below 1)
  double max_numeric = 0;  // largest |numeric| and |analytic| over the checked elements
  double max_analytic = 0;
};

// Checks analytic[i] against the central difference of f in v[i] and reports the worst element.
inline GradientReport expect_gradient(const std::function<double()>& f, std::span<double> v,
                                      std::span<const double> analytic,
                                      const GradientTolerance& tol, const std::string& what,
                                      const GradientSpan& span = {}) {
  GradientReport r;
  if (v.size() != analytic.size()) {
    ADD_FAILURE() << what << ": " << v.size() << " values, " << analytic.size() << " gradients";
    return r;
  }
  const size_t end = std::min(span.end, v.size());
  std::vector<double> numeric;
  for (size_t i = span.begin; i < end; i += span.stride) {
    numeric.push_back(central_difference(f, v, i, span.h));
    r.max_numeric = std::max(r.max_numeric, std::abs(numeric.back()));
    r.max_analytic = std::max(r.max_analytic, std::abs(analytic[i]));
  }
  r.checked = numeric.size();
  const double of_max = tol.of_max * std::max(tol.max_floor, r.max_numeric);
  double worst_numeric = 0;
  for (size_t k = 0; k < numeric.size(); ++k) {
    const size_t i = span.begin + k * span.stride;
    const double bound = tol.abs + tol.rel * std::abs(numeric[k]) + of_max;
    const double err = std::abs(analytic[i] - numeric[k]);
    const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
    if (ratio > r.worst_ratio || std::isnan(err)) {
      r.worst_ratio = std::isnan(err) ? INFINITY : ratio;
      r.worst_index = i;
      worst_numeric = numeric[k];
    }
  }
  EXPECT_LE(r.worst_ratio, 1.0) << what << ": element " << r.worst_index << " analytic "
                                << analytic[r.worst_index] << " numeric " << worst_numeric
                                << " (error " << r.worst_ratio << " x its bound)";
  return r;
}

// The error of every element within tol of the gradient's scale (its largest magnitude, at
// least 1).
inline GradientReport expect_gradient(const std::function<double()>& f, std::span<double> v,
                                      std::span<const double> analytic, double tol,
                                      const std::string& what, size_t stride = 1) {
  return expect_gradient(f, v, analytic, {.of_max = tol, .max_floor = 1.0}, what,
                         {.stride = stride});
}

}  // namespace tinylm::test
