#include "tinylm/distributed/grad_exchange.h"

#include <omp.h>

#include <algorithm>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"

namespace tinylm::distributed {

template <class T>
GradExchange<T>::GradExchange(const Comm& comm, size_t bucket)
    : comm_(comm), bucket_(std::max<size_t>(bucket, 1)) {}

template <class T>
GradExchange<T>::~GradExchange() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

template <class T>
void GradExchange<T>::start(std::vector<const T*> parts, T* out, size_t n, size_t unit) {
  parts_ = std::move(parts);
  out_ = out;
  n_ = n;
  unit_ = unit;
  pending_ = {};
  reported_.clear();
  if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
}

template <class T>
void GradExchange<T>::done(size_t begin, size_t end) {
  check(begin <= end && end <= n_, "gradient exchange: range [", begin, ", ", end, ") outside the ",
        n_, " values");
  if (begin == end) return;
  const bool empty = pending_.begin == pending_.end;
  if (!empty && (end == pending_.begin || begin == pending_.end)) {
    pending_ = {std::min(begin, pending_.begin), std::max(end, pending_.end)};
  } else {
    if (!empty) push(pending_);
    pending_ = {begin, end};
  }
  if (pending_.end - pending_.begin >= bucket_) {
    push(pending_);
    pending_ = {};
  }
}

template <class T>
void GradExchange<T>::push(Range r) {
  reported_.push_back(r);
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(r);
    ++busy_;
  }
  cv_.notify_all();
}

template <class T>
double GradExchange<T>::finish() {
  if (pending_.begin != pending_.end) push(pending_);
  pending_ = {};
  // What the backward did not report (all of it for a family that reports nothing), in order.
  std::vector<Range> seen = reported_;
  std::sort(seen.begin(), seen.end(), [](Range a, Range b) { return a.begin < b.begin; });
  size_t at = 0;
  bool overlap = false;
  std::vector<Range> rest;
  for (const Range r : seen) {
    overlap |= r.begin < at;
    if (r.begin > at) rest.push_back({at, r.begin});
    at = std::max(at, r.end);
  }
  if (at < n_) rest.push_back({at, n_});
  if (!overlap)
    for (const Range r : rest) push(r);
  const Timer waited;
  {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return busy_ == 0; });
  }
  check(!overlap, "gradient exchange: a range was reported twice");
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return waited.elapsed_ms() / 1e3;
}

template <class T>
void GradExchange<T>::work() {
  // The sums run on this thread alone: the training thread's team keeps the cores.
  omp_set_num_threads(1);
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping
    const Range r = queue_.front();
    queue_.pop_front();
    lock.unlock();
    try {
      if (!error_) comm_.reduce_scatter_mean<T>(parts_, out_, n_, unit_, r.begin, r.end);
    } catch (...) {
      error_ = std::current_exception();
    }
    lock.lock();
    --busy_;
    if (busy_ == 0) cv_.notify_all();
  }
}

template class GradExchange<float>;
template class GradExchange<double>;

}  // namespace tinylm::distributed
