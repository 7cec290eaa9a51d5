#pragma once
// Data parallelism (`--devices N`, and over MPI processes): N replicas of a model in this
// process, each training on its shard of every micro-batch. The batch is split on axis 0 into
// S = processes x N equal shards; this process trains shards rank*N .. rank*N+N-1
// (distributed/comm.h). The loop sees one Trainable whose parameters are replica 0's (the same on
// every process). The gradient is the mean of the S shards' gradients, summed in shard order; under
// MPI each process is given its part of it (distributed::Comm::my_part), which the loop updates and
// shares, and each shard's forward and backward give the same bits on any number of threads
// (kernels/matmul/gemm.h says where), so a step's result depends on the number of shards alone, not
// on how they are spread over processes. Against one shard it differs only by floating-point
// summation order.
//
// Under MPI the exchange can run on a thread of its own, bucket by bucket as the last replica's
// backward completes them (distributed/grad_exchange.h); otherwise it follows the backward.
//
// The shards run one after another, each on all the process's threads: on a CPU the replicas
// share the cores, and a larger product per shard uses them better than shards side by side.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tinylm/distributed/comm.h"
#include "tinylm/distributed/grad_exchange.h"
#include "tinylm/train/trainable.h"

namespace tinylm::train {

template <class T>
class Replicas final : public Trainable<T> {
 public:
  // replicas[s] trains shard s; all have the same layout (and are planned for micro-batches
  // of batch / N rows). Their parameters are made equal to replica 0's before every pass.
  // overlap: exchange the gradient during the backward (distributed::Comm::overlap_exchange says
  // when).
  explicit Replicas(std::vector<std::unique_ptr<Trainable<T>>> replicas, bool overlap = false,
                    distributed::Comm& comm = distributed::Comm::world());
  Replicas(const Replicas&) = delete;
  Replicas& operator=(const Replicas&) = delete;

  std::string_view arch() const override { return replicas_.front()->arch(); }
  const ParamLayout& layout() const override { return replicas_.front()->layout(); }
  std::span<T> params() override { return replicas_.front()->params(); }
  std::span<T> grads() override { return replicas_.front()->grads(); }
  StepLoss forward_backward(const Rows& rows, int64_t micro_rows, double grad_scale, uint64_t seed,
                            int64_t step) override;
  StepLoss evaluate(const Rows& rows, int64_t micro_rows) override;
  double flops_per_token() const override { return replicas_.front()->flops_per_token(); }
  // One replica in one process: its own (there is no exchange to feed).
  DeviceOptimizer* optimizer_on_device() override {
    return replicas_.size() == 1 && comm_.size() == 1 ? replicas_.front()->optimizer_on_device()
                                                      : nullptr;
  }

  int64_t devices() const { return static_cast<int64_t>(replicas_.size()); }
  int64_t shards() const { return devices() * comm_.size(); }
  Trainable<T>& replica(int64_t s) { return *replicas_[static_cast<size_t>(s)]; }

 private:
  // Global shard s of every micro-batch of `rows`, as rows of their own (valid until the next
  // call).
  Rows shard(const Rows& rows, int64_t micro_rows, int64_t s);
  void sync_params();
  // pass(replica, its shard's rows, rows per shard micro-batch) on every shard in order, after
  // syncing the parameters; the mean of their losses.
  template <class Pass>
  StepLoss each_shard(const Rows& rows, int64_t micro_rows, Pass&& pass);

  std::vector<std::unique_ptr<Trainable<T>>> replicas_;
  distributed::Comm& comm_;
  // Under MPI: the exchange, fed by the last replica's backward as it completes the gradient.
  std::unique_ptr<distributed::GradExchange<T>> exchange_;
  std::vector<int32_t> shard_tokens_;
};

}  // namespace tinylm::train
