#pragma once
// The processes of a data-parallel run: MPI's ranks when tinylm is built with MPI and started
// by mpirun, otherwise this process alone (everything below is then trivial). A run's batch is
// cut into S = processes x devices shards; process r holds shards r*D .. r*D+D-1.
//
// Sums over shards are taken in shard order by tinylm itself, never by MPI_Allreduce (whose
// order depends on the algorithm Open MPI picks): each process receives its part of every
// shard's gradient (MPI_Alltoallv) and sums them in shard order; it updates the parameters of
// its part alone, and the parts are then shared (MPI_Allgatherv). The result is the same bits
// however the shards are spread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tinylm::distributed {

// Whether a data-parallel step exchanges its gradient on a thread of its own while the
// backward runs (distributed/grad_exchange.h): auto does where a core is left for that thread.
enum class Overlap : uint8_t { automatic, on, off };
Overlap parse_overlap(std::string_view name);  // "auto" | "on" | "off"

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

  // Whether a second thread may make the MPI calls while this one does not (MPI granted
  // MPI_THREAD_SERIALIZED): the gradient exchange then overlaps the backward.
  bool overlaps() const { return overlaps_; }

  // The decision for `mode` with `threads` training threads per process: never in one
  // process or without overlaps(); auto where the processes on this machine times their
  // threads leave a core free (the exchange thread would otherwise take compute's).
  bool overlap_exchange(Overlap mode, int threads) const;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  void barrier() const;

  // The part of n values that process q reduces and updates: whole units of `unit` values
  // (the last one may be short) split as evenly as the units allow, in rank order.
  struct Part {
    size_t begin = 0, end = 0;
  };
  Part part(size_t n, size_t unit, int q) const;
  Part my_part(size_t n, size_t unit) const { return part(n, unit, rank_); }

  // parts[j]: this process's shard j gradient (n values each, shards in order). Writes into
  // out's elements of my_part(n, unit) that lie in [begin, end) the mean over all processes'
  // shards, summed in global shard order (out may be parts[0]; its other elements are left as
  // they are). Every process calls it with the same range.
  template <class T>
  void reduce_scatter_mean(std::span<const T* const> parts, T* out, size_t n, size_t unit,
                           size_t begin, size_t end) const;
  // Every process's part of data (n values, parts as part(n, unit, q)) to every process, in
  // place.
  template <class T>
  void all_gather_parts(T* data, size_t n, size_t unit) const;
  // Whether `mine` is true on every process.
  bool all_of(bool mine) const;

  // Every process's values (the same count on each), concatenated in rank order.
  std::vector<double> all_gather(std::span<const double> mine) const;

  // Seconds the training thread spent waiting on communication since the last call (reset by
  // reading). The collectives below count themselves; reduce_scatter_mean's callers add theirs.
  double take_comm_seconds();
  void add_wait(double seconds) const { comm_s_ += seconds; }

 private:
  int rank_ = 0, size_ = 1;
  int local_size_ = 1;  // processes on this machine
  bool overlaps_ = false;
  mutable double comm_s_ = 0;
  mutable std::vector<std::byte> send_, recv_;
};

}  // namespace tinylm::distributed
