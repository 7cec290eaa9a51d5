#pragma once
// Threading lives inside kernels: models call parallel_for over rows or heads and stay
// sequential and readable. Backed by OpenMP; the thread count is set once per process.
#include <cstdint>
#include <omp.h>

namespace tinylm {

// Sets the number of threads kernels use; n <= 0 means all cores.
void set_num_threads(int n);
int num_threads();

// Calls fn(i) for i in [begin, end), split across threads in chunks of at least `grain`
// iterations; runs inline when the range is too small to be worth a fork.
template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain || omp_get_max_threads() == 1 || omp_in_parallel()) {
    for (int64_t i = begin; i < end; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = begin; i < end; ++i) fn(i);
}

}  // namespace tinylm
