#pragma once
// A tiny benchmark harness: warm-ups, then repeated timed runs; report the median.
#include <algorithm>
#include <vector>

#include "tinylm/core/timer.h"

namespace tinylm::bench {

struct Stats {
  double median_ms = 0, min_ms = 0;
};

template <class Fn>
Stats time_it(int warmups, int reps, Fn&& fn) {
  for (int i = 0; i < warmups; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    Timer t;
    fn();
    ms.push_back(t.elapsed_ms());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

}  // namespace tinylm::bench
