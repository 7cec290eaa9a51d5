#pragma once
// A tiny benchmark harness: warm-ups, then repeated timed runs; report the median.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "tinylm/core/timer.h"
#include "tinylm/kernels/cpu/isa.h"

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

// "kernels: avx2 (supported: generic avx2 avx512)": every benchmark prints the level its
// figures were measured at (TINYLM_ISA forces a lower one).
inline std::string level_line() { return "kernels: " + kernels::isa_summary(); }

// A memory field of /proc/self/status in bytes ("VmRSS", "VmHWM"), 0 when absent.
inline double proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) * 1024.0;
  }
  return 0;
}

}  // namespace tinylm::bench
