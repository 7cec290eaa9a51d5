#include "tinylm/train/comm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"

#if defined(TINYLM_HAVE_MPI)
#include <mpi.h>
#endif

namespace tinylm::train {

namespace {

Comm g_world;

#if defined(TINYLM_HAVE_MPI)
bool g_mpi = false;

// Chunk q of n values split into `parts` nearly equal chunks: [lo, hi).
std::pair<size_t, size_t> chunk(size_t n, int q, int parts) {
  const size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(q);
  return {n * i / p, n * (i + 1) / p};
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fail("MPI: ", what, " failed (error ", rc, ")");
}
#endif

}  // namespace

Comm& Comm::world() { return g_world; }

bool Comm::built_with_mpi() {
#if defined(TINYLM_HAVE_MPI)
  return true;
#else
  return false;
#endif
}

void Comm::init(int* argc, char*** argv) {
#if defined(TINYLM_HAVE_MPI)
  // Under mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE; other launchers PMI_SIZE); otherwise a
  // plain process that never touches MPI.
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMI_SIZE")) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // An error on any rank ends the whole run (MPI_Abort) rather than leaving the others
  // waiting in a collective.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size_);
  g_mpi = true;
#else
  (void)argc;
  (void)argv;
#endif
}

void Comm::finalize() {
#if defined(TINYLM_HAVE_MPI)
  if (g_mpi) MPI_Finalize();
  g_mpi = false;
#endif
}

void Comm::abort(int code) {
#if defined(TINYLM_HAVE_MPI)
  if (g_mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

void Comm::barrier() const {
#if defined(TINYLM_HAVE_MPI)
  if (size_ > 1) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

template <class T>
void Comm::mean_in_shard_order(std::span<const T* const> parts, T* out, size_t n) const {
  const int64_t local = static_cast<int64_t>(parts.size());
  const T shards = static_cast<T>(local * size_);
  if (size_ == 1) {
    parallel_for(0, static_cast<int64_t>(n), grain_for(local), [&](int64_t i) {
      T sum = parts[0][i];
      for (int64_t s = 1; s < local; ++s) sum += parts[static_cast<size_t>(s)][i];
      out[i] = sum / shards;
    });
    return;
  }
#if defined(TINYLM_HAVE_MPI)
  const double t0 = now_s();
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  const size_t D = parts.size();
  // Send: for each process q, chunk q of each of my shards. Receive: my chunk of every shard,
  // from process p's shards in order, so the receive buffer is in global shard order.
  std::vector<int> send_counts(static_cast<size_t>(size_)), send_offsets(send_counts.size()),
      recv_counts(send_counts.size()), recv_offsets(send_counts.size());
  const auto [my_lo, my_hi] = chunk(n, rank_, size_);
  const size_t mine = my_hi - my_lo;
  // One device: its gradient is already laid out chunk by chunk, so it is sent where it is.
  const bool direct = D == 1;
  send_.resize(direct ? 0 : D * n * sizeof(T));
  recv_.resize(static_cast<size_t>(size_) * D * mine * sizeof(T));
  T* send = reinterpret_cast<T*>(send_.data());
  T* recv = reinterpret_cast<T*>(recv_.data());
  size_t at = 0;
  for (int q = 0; q < size_; ++q) {
    const auto [lo, hi] = chunk(n, q, size_);
    send_offsets[static_cast<size_t>(q)] = static_cast<int>(direct ? lo : at);
    for (size_t j = 0; j < D && !direct; ++j) {
      std::memcpy(send + at, parts[j] + lo, (hi - lo) * sizeof(T));
      at += hi - lo;
    }
    send_counts[static_cast<size_t>(q)] = static_cast<int>(D * (hi - lo));
    recv_counts[static_cast<size_t>(q)] = static_cast<int>(D * mine);
    recv_offsets[static_cast<size_t>(q)] = static_cast<int>(static_cast<size_t>(q) * D * mine);
  }
  check(D * n <= static_cast<size_t>(std::numeric_limits<int>::max()), "MPI: a gradient of ", n,
        " values on ", D, " devices is too large for one exchange");
  check_mpi(MPI_Alltoallv(direct ? parts[0] : send, send_counts.data(), send_offsets.data(), type,
                          recv, recv_counts.data(), recv_offsets.data(), type, MPI_COMM_WORLD),
            "MPI_Alltoallv");
  const size_t total = static_cast<size_t>(size_) * D;
  // My chunk's means go straight to its place in out (the exchange above has sent what was
  // there, should out be a device's gradient), and every process's chunk is gathered in place.
  T* sums = out + my_lo;
  parallel_for(0, static_cast<int64_t>(mine), grain_for(static_cast<int64_t>(total)),
               [&](int64_t i) {
                 T sum = recv[i];
                 for (size_t s = 1; s < total; ++s) sum += recv[s * mine + static_cast<size_t>(i)];
                 sums[i] = sum / shards;
               });
  for (int q = 0; q < size_; ++q) {
    const auto [lo, hi] = chunk(n, q, size_);
    recv_counts[static_cast<size_t>(q)] = static_cast<int>(hi - lo);
    recv_offsets[static_cast<size_t>(q)] = static_cast<int>(lo);
  }
  check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, recv_counts.data(),
                           recv_offsets.data(), type, MPI_COMM_WORLD),
            "MPI_Allgatherv");
  comm_s_ += now_s() - t0;
#endif
}

std::vector<double> Comm::all_gather(std::span<const double> mine) const {
  std::vector<double> all(mine.size() * static_cast<size_t>(size_));
  if (size_ == 1) {
    std::copy(mine.begin(), mine.end(), all.begin());
    return all;
  }
#if defined(TINYLM_HAVE_MPI)
  const double t0 = now_s();
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                          static_cast<int>(mine.size()), MPI_DOUBLE, MPI_COMM_WORLD),
            "MPI_Allgather");
  comm_s_ += now_s() - t0;
#endif
  return all;
}

double Comm::take_comm_seconds() { return std::exchange(comm_s_, 0.0); }

template void Comm::mean_in_shard_order(std::span<const float* const>, float*, size_t) const;
template void Comm::mean_in_shard_order(std::span<const double* const>, double*, size_t) const;

}  // namespace tinylm::train
