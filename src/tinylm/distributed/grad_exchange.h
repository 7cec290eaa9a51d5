#pragma once
// A data-parallel step's gradient exchange (Comm::reduce_scatter_mean) on a thread of its own,
// bucket by bucket as the backward completes the gradient, so that it overlaps the rest of the
// backward. Open MPI makes progress only inside MPI calls (it has no progress thread), so this
// thread sits in the exchange while the training thread computes.
//
// Buckets are cut from the sequence of ranges the backward reports, which is the same on every
// process: adjacent ranges are merged until a bucket holds `bucket` values. Every process thus
// runs the same collectives in the same order, and each bucket's sums are those of one whole
// exchange (each element is summed in shard order either way).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tinylm/distributed/comm.h"

namespace tinylm::distributed {

template <class T>
class GradExchange {
 public:
  explicit GradExchange(const Comm& comm, size_t bucket = size_t{1} << 20);
  ~GradExchange();
  GradExchange(const GradExchange&) = delete;
  GradExchange& operator=(const GradExchange&) = delete;

  // A step's exchange of n values: parts[j] this process's shard j gradient, the mean into
  // out's part (as reduce_scatter_mean, in whole units of `unit`).
  void start(std::vector<const T*> parts, T* out, size_t n, size_t unit);
  // [begin, end) of every part is final: exchange it (once a bucket is full).
  void done(size_t begin, size_t end);
  // Exchanges whatever was not reported and waits until every bucket is through; returns the
  // seconds the calling thread waited. Rethrows an error of the exchange thread.
  double finish();

 private:
  using Range = Comm::Part;
  void push(Range r);
  void work();

  const Comm& comm_;
  const size_t bucket_;
  std::vector<const T*> parts_;
  T* out_ = nullptr;
  size_t n_ = 0, unit_ = 1;
  Range pending_{};              // reported, not yet handed to the thread
  std::vector<Range> reported_;  // this step's buckets, for what finish() adds
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Range> queue_;
  size_t busy_ = 0;  // buckets queued or being exchanged
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

extern template class GradExchange<float>;
extern template class GradExchange<double>;

}  // namespace tinylm::distributed
