#pragma once
// The processes of a data-parallel run: MPI's ranks when tinylm is built with MPI and started
// by mpirun, otherwise this process alone (everything below is then trivial). A run's batch is
// cut into S = processes x devices shards; process r holds shards r*D .. r*D+D-1.
//
// Sums over shards are taken in shard order by tinylm itself, never by MPI_Allreduce (whose
// order depends on the algorithm Open MPI picks): each process receives one chunk of every
// shard's gradient (MPI_Alltoall), sums the chunks in shard order and shares its sums
// (MPI_Allgatherv). The result is the same bits however the shards are spread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tinylm::train {

class Comm {
 public:
  // The world of this process: initialized on first use from main() via init().
  static Comm& world();
  // Joins MPI when built with it and started under mpirun (its environment says so); call
  // once, first thing in main. finalize() leaves it (at a normal exit).
  static void init(int* argc, char*** argv);
  static void finalize();
  // Whether this build has MPI (the CLI's --version says so).
  static bool built_with_mpi();
  // Ends every process of the run at once (after one of them hit an error).
  [[noreturn]] static void abort(int code);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  void barrier() const;

  // parts[j]: this process's shard j gradient (n values each, shards in order). Writes the
  // mean over all processes' shards, summed in global shard order, into out (n values; it may
  // be parts[0]) on every process.
  template <class T>
  void mean_in_shard_order(std::span<const T* const> parts, T* out, size_t n) const;

  // Every process's values (the same count on each), concatenated in rank order.
  std::vector<double> all_gather(std::span<const double> mine) const;

  // Seconds spent in communication since the last call (reset by reading).
  double take_comm_seconds();

 private:
  int rank_ = 0, size_ = 1;
  mutable double comm_s_ = 0;
  mutable std::vector<std::byte> send_, recv_;
};

}  // namespace tinylm::train
