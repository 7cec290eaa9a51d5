#include "tinylm/distributed/comm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"

#if defined(TINYLM_HAVE_MPI)
#include <mpi.h>
#endif

namespace tinylm::distributed {

namespace {

Comm g_world;

#if defined(TINYLM_HAVE_MPI)
bool g_mpi = false;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fail("MPI: ", what, " failed (error ", rc, ")");
}
#endif

}  // namespace

Comm& Comm::world() { return g_world; }

namespace {
constexpr EnumName<Overlap> kOverlapNames[] = {
    {Overlap::automatic, "auto"}, {Overlap::on, "on"}, {Overlap::off, "off"}};
}  // namespace

Overlap parse_overlap(std::string_view name) {
  if (const std::optional<Overlap> o = find_named(kOverlapNames, name)) return *o;
  fail("--overlap ", name, ": expected ", names_list(kOverlapNames));
}

bool Comm::overlap_exchange(Overlap mode, int threads) const {
  if (size_ == 1 || !overlaps_ || mode == Overlap::off) return false;
  if (mode == Overlap::on) return true;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 && static_cast<int64_t>(local_size_) * threads < static_cast<int64_t>(cores);
}

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
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  // An error on any rank ends the whole run (MPI_Abort) rather than leaving the others
  // waiting in a collective.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size_);
  g_world.overlaps_ = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_size(local, &g_world.local_size_);
  MPI_Comm_free(&local);
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

Comm::Part Comm::part(size_t n, size_t unit, int q) const {
  const size_t units = (n + unit - 1) / unit, p = static_cast<size_t>(size_);
  const size_t i = static_cast<size_t>(q);
  return {std::min(n, units * i / p * unit), std::min(n, units * (i + 1) / p * unit)};
}

template <class T>
void Comm::reduce_scatter_mean(std::span<const T* const> parts, T* out, size_t n, size_t unit,
                               size_t begin, size_t end) const {
  const size_t D = parts.size();
  const size_t total = static_cast<size_t>(size_) * D;
  const T shards = static_cast<T>(total);
  // This process's elements of [begin, end).
  const auto within = [&](int q) {
    const Part p = part(n, unit, q);
    const size_t lo = std::clamp(p.begin, begin, end), hi = std::clamp(p.end, begin, end);
    return Part{lo, std::max(lo, hi)};
  };
  const Part mine = within(rank_);
  const size_t count = mine.end - mine.begin;
  const T* recv = nullptr;
#if defined(TINYLM_HAVE_MPI)
  if (size_ > 1) {
    const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
    check(D * n <= static_cast<size_t>(std::numeric_limits<int>::max()), "MPI: a gradient of ", n,
          " values on ", D, " devices is too large for one exchange");
    // Send to process q its elements of each of my shards; receive my elements of every shard,
    // process p's shards in order, so the receive buffer is in global shard order. One device's
    // gradient is sent from where it lies.
    const bool direct = D == 1;
    std::vector<int> send_counts(static_cast<size_t>(size_)), send_offsets(send_counts.size()),
        recv_counts(send_counts.size()), recv_offsets(send_counts.size());
    send_.resize(direct ? 0 : D * (end - begin) * sizeof(T));
    recv_.resize(total * count * sizeof(T));
    T* send = reinterpret_cast<T*>(send_.data());
    size_t at = 0;
    for (int q = 0; q < size_; ++q) {
      const Part theirs = within(q);
      const size_t c = theirs.end - theirs.begin, k = static_cast<size_t>(q);
      send_offsets[k] = static_cast<int>(direct ? theirs.begin : at);
      for (size_t j = 0; j < D && !direct; ++j) {
        std::memcpy(send + at, parts[j] + theirs.begin, c * sizeof(T));
        at += c;
      }
      send_counts[k] = static_cast<int>(D * c);
      recv_counts[k] = static_cast<int>(D * count);
      recv_offsets[k] = static_cast<int>(k * D * count);
    }
    check_mpi(
        MPI_Alltoallv(direct ? parts[0] : send, send_counts.data(), send_offsets.data(), type,
                      recv_.data(), recv_counts.data(), recv_offsets.data(), type, MPI_COMM_WORLD),
        "MPI_Alltoallv");
    recv = reinterpret_cast<const T*>(recv_.data());
  }
#endif
  // Where shard s's values of my elements are: after an exchange in its receive buffer, else
  // in this process's shards themselves. The exchange has already sent what was in out,
  // should out be a device's gradient.
  std::vector<const T*> shard(total);
  for (size_t s = 0; s < total; ++s)
    shard[s] = size_ > 1 ? recv + s * count : parts[s] + mine.begin;
  T* sums = out + mine.begin;
  parallel_for(0, static_cast<int64_t>(count), grain_for(static_cast<int64_t>(total)),
               [&](int64_t i) {
                 T sum = shard[0][i];
                 for (size_t s = 1; s < total; ++s) sum += shard[s][i];
                 sums[i] = sum / shards;
               });
}

template <class T>
void Comm::all_gather_parts(T* data, size_t n, size_t unit) const {
  if (size_ == 1) return;
#if defined(TINYLM_HAVE_MPI)
  const double t0 = now_s();
  check(n <= static_cast<size_t>(std::numeric_limits<int>::max()), "MPI: ", n,
        " values are too many for one exchange");
  std::vector<int> counts(static_cast<size_t>(size_)), offsets(counts.size());
  for (int q = 0; q < size_; ++q) {
    const Part p = part(n, unit, q);
    counts[static_cast<size_t>(q)] = static_cast<int>(p.end - p.begin);
    offsets[static_cast<size_t>(q)] = static_cast<int>(p.begin);
  }
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), offsets.data(),
                           type, MPI_COMM_WORLD),
            "MPI_Allgatherv");
  comm_s_ += now_s() - t0;
#else
  (void)data;
  (void)n;
  (void)unit;
#endif
}

bool Comm::all_of(bool mine) const {
  int v = mine ? 1 : 0;
#if defined(TINYLM_HAVE_MPI)
  if (size_ > 1) {
    const double t0 = now_s();
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD),
              "MPI_Allreduce");
    comm_s_ += now_s() - t0;
  }
#endif
  return v != 0;
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

template void Comm::reduce_scatter_mean(std::span<const float* const>, float*, size_t, size_t,
                                        size_t, size_t) const;
template void Comm::reduce_scatter_mean(std::span<const double* const>, double*, size_t, size_t,
                                        size_t, size_t) const;
template void Comm::all_gather_parts(float*, size_t, size_t) const;
template void Comm::all_gather_parts(double*, size_t, size_t) const;

}  // namespace tinylm::distributed
