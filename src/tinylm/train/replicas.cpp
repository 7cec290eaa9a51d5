#include "tinylm/train/replicas.h"

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/core/timer.h"
#include "tinylm/optim/grad_ops.h"

namespace tinylm::train {

template <class T>
Replicas<T>::Replicas(std::vector<std::unique_ptr<Trainable<T>>> replicas, bool overlap,
                      distributed::Comm& comm)
    : replicas_(std::move(replicas)), comm_(comm) {
  check(!replicas_.empty(), "replicas: at least one device is needed");
  for (const auto& r : replicas_) {
    check(r->params().size() == replicas_.front()->params().size(),
          "replicas: the devices' models differ in size");
  }
  if (overlap && comm_.size() > 1 && comm_.overlaps()) {
    exchange_ = std::make_unique<distributed::GradExchange<T>>(comm_);
    replicas_.back()->report_grads(
        [this](size_t begin, size_t end) { exchange_->done(begin, end); });
  }
}

template <class T>
void Replicas<T>::sync_params() {
  const std::span<const T> from = replicas_.front()->params();
  for (size_t s = 1; s < replicas_.size(); ++s) {
    const std::span<T> to = replicas_[s]->params();
    std::copy(from.begin(), from.end(), to.begin());
  }
}

template <class T>
Rows Replicas<T>::shard(const Rows& rows, int64_t micro_rows, int64_t s) {
  const int64_t b = micro_rows / shards(), micro_batches = rows.count / micro_rows;
  shard_tokens_.resize(static_cast<size_t>(micro_batches * b * rows.width));
  for (int64_t a = 0; a < micro_batches; ++a) {
    const auto from = rows.tokens.begin() + (a * micro_rows + s * b) * rows.width;
    std::copy(from, from + b * rows.width, shard_tokens_.begin() + a * b * rows.width);
  }
  return {shard_tokens_, micro_batches * b, rows.width, rows.first_row + s * b};
}

template <class T>
template <class Pass>
StepLoss Replicas<T>::each_shard(const Rows& rows, int64_t micro_rows, Pass&& pass) {
  const int64_t n = shards();
  check(micro_rows % n == 0, "a micro-batch of ", micro_rows, " rows does not split into ", n,
        " shards");
  sync_params();
  std::vector<double> mine;  // loss, objective, tokens of each of this process's shards
  for (int64_t j = 0; j < devices(); ++j) {
    const int64_t s = comm_.rank() * devices() + j;
    const StepLoss l = pass(replica(j), shard(rows, micro_rows, s), micro_rows / n);
    mine.insert(mine.end(), {l.loss, l.objective, static_cast<double>(l.tokens)});
  }
  const std::vector<double> all = comm_.all_gather(mine);  // in shard order
  StepLoss out;
  for (size_t s = 0; s < all.size(); s += 3) {
    out.loss += all[s];
    out.objective += all[s + 1];
    out.tokens += static_cast<int64_t>(all[s + 2]);
  }
  out.loss /= static_cast<double>(n);
  out.objective /= static_cast<double>(n);
  return out;
}

template <class T>
StepLoss Replicas<T>::forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale,
                                       uint64_t seed, int64_t step) {
  // The mean of all shards' gradients, summed in shard order, into replica 0's buffer: the
  // part of it this process updates (the loop's).
  std::vector<const T*> parts;
  for (int64_t j = 0; j < devices(); ++j) parts.push_back(replica(j).grads().data());
  const size_t n = grads().size();
  if (exchange_) exchange_->start(parts, grads().data(), n, optim::kGradChunk);
  const StepLoss out =
      each_shard(rows, micro_rows, [&](Trainable<T>& r, const Rows& part, int64_t part_rows) {
        const StepLoss l = r.forward_backward(part, part_rows, grad_scale, seed, step);
        if (exchange_ && &r == replicas_.back().get()) comm_.add_wait(exchange_->finish());
        return l;
      });
  if (shards() > 1 && !exchange_) {
    const Timer waited;
    comm_.reduce_scatter_mean<T>(parts, grads().data(), n, optim::kGradChunk, 0, n);
    comm_.add_wait(waited.elapsed_ms() / 1e3);
  }
  return out;
}

template <class T>
StepLoss Replicas<T>::evaluate(const Rows& rows, int64_t micro_rows) {
  return each_shard(rows, micro_rows, [](Trainable<T>& r, const Rows& part, int64_t part_rows) {
    return r.evaluate(part, part_rows);
  });
}

template class Replicas<float>;
template class Replicas<double>;

}  // namespace tinylm::train
