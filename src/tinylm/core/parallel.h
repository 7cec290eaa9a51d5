#pragma once
// Threading lives inside kernels: models call parallel_for over rows or heads and stay
// sequential and readable. Backed by OpenMP; the thread count is set once per process.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace tinylm {

// The most threads a --threads flag may ask for: 4 x the cores (at least 8, at most
// kMaxThreadsCap). More than that only oversubscribes the cores, and huge counts crash the
// OpenMP runtime (each thread reserves a stack).
inline constexpr int kMaxThreadsCap = 1024;
int max_threads();

// Throws Error unless 1 <= n <= max_threads(), naming `flag`: what an explicit --threads N
// must be.
void check_threads(int64_t n, const char* flag = "--threads");

// Sets the number of threads kernels use: 0 means all cores (the flags' default); any other
// value must pass check_threads.
void set_num_threads(int64_t n);
int num_threads();

// The grain for parallel_for over items of `work` elementary operations each: a range only
// forks when it holds about a quarter of a million operations (tens of microseconds) or more.
// A fork/join costs microseconds on an idle machine but a scheduler time slice (~20 ms
// measured) when the cores are oversubscribed, so the smallest passes (a decode step's
// LayerNorm, bias or residual over a few rows) stay on the calling thread; a training batch's
// LayerNorm (768 rows of 128 in nanoGPT's CPU recipe) forks.
inline int64_t grain_for(int64_t work) { return 1 + (int64_t{1} << 18) / (work > 0 ? work : 1); }

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

// The number of threads parallel_region(max_threads, ...) runs on.
inline int region_threads(int64_t max_threads) {
  if (omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<int64_t>(max_threads, 1, omp_get_max_threads()));
}

// Runs fn(thread, nthreads) once on each thread of a team of up to
// region_threads(max_threads) (inline as thread 0 of 1 when that is 1; the OpenMP runtime
// may give fewer, so work split by thread uses nthreads). With ChunkQueue and barrier(), a
// kernel can run phases without paying a fork and join for each.
template <class Fn>
void parallel_region(int64_t max_threads, Fn&& fn) {
  const int n = region_threads(max_threads);
  if (n == 1) return fn(0, 1);
#pragma omp parallel num_threads(n)
  fn(omp_get_thread_num(), omp_get_num_threads());
}

// Waits for every thread of the enclosing parallel_region.
inline void barrier() {
#pragma omp barrier
}

// Hands out the chunks [0, n) to the threads of one parallel_region (built for its
// region_threads; the shares of threads the runtime did not start are taken by the others).
// Each thread first walks its own contiguous share in order, so it reads memory as one
// forward stream that the hardware prefetchers follow; a thread that runs out takes chunks
// from the tail of the others' shares. On these shared machines one core is often 10-20%
// slower than the other for seconds at a time, and with fixed shares the faster one would
// wait at every join.
// Which thread runs a chunk varies from run to run, so callers keep results per chunk and
// combine them in chunk order when the rounding must not depend on the schedule.
class ChunkQueue {
 public:
  ChunkQueue(int64_t n, int nthreads) : n_(nthreads), shares_(std::make_unique<Share[]>(nthreads)) {
    for (int t = 0; t < nthreads; ++t) {
      const uint64_t lo = static_cast<uint64_t>(n * t / nthreads),
                     hi = static_cast<uint64_t>(n * (t + 1) / nthreads);
      shares_[t].range.store(lo << 32 | hi, std::memory_order_relaxed);
    }
  }
  // The next chunk for `thread`, or -1 when every chunk has been taken.
  int64_t next(int thread) {
    // A share is [lo, hi) packed into one word: the owner advances lo, others retreat hi.
    const auto take = [](std::atomic<uint64_t>& range, bool front) -> int64_t {
      uint64_t cur = range.load(std::memory_order_relaxed);
      while ((cur >> 32) < (cur & 0xffffffffu)) {
        const uint64_t want = front ? cur + (uint64_t{1} << 32) : cur - 1;
        if (range.compare_exchange_weak(cur, want, std::memory_order_relaxed)) {
          return front ? static_cast<int64_t>(cur >> 32)
                       : static_cast<int64_t>(cur & 0xffffffffu) - 1;
        }
      }
      return -1;
    };
    if (const int64_t c = take(shares_[thread].range, true); c >= 0) return c;
    for (int d = 1; d < n_; ++d) {
      if (const int64_t c = take(shares_[(thread + d) % n_].range, false); c >= 0) return c;
    }
    return -1;
  }

 private:
  struct alignas(64) Share {  // one cache line each: owners update their own without sharing
    std::atomic<uint64_t> range;
  };
  int n_;
  std::unique_ptr<Share[]> shares_;
};

// Calls fn(i) for every i in [0, n) with a ChunkQueue: for work whose cost per item varies
// between threads and whose results do not depend on which thread computes them.
template <class Fn>
void parallel_for_balanced(int64_t n, Fn&& fn) {
  if (n <= 0) return;
  const int nthreads = region_threads(n);
  ChunkQueue queue(n, nthreads);
  parallel_region(nthreads, [&](int thread, int) {
    for (int64_t i; (i = queue.next(thread)) >= 0;) fn(i);
  });
}

}  // namespace tinylm
