#include "tinylm/core/parallel.h"

#include "tinylm/core/error.h"

namespace tinylm {

int max_threads() { return std::clamp(4 * omp_get_num_procs(), 8, kMaxThreadsCap); }

void check_threads(int64_t n, const char* flag) {
  check(n >= 1 && n <= max_threads(), flag, " ", n, ": must be in 1..", max_threads(), " (",
        omp_get_num_procs(), " cores here; at most 4 threads per core)");
}

void set_num_threads(int64_t n) {
  if (n != 0) check_threads(n);
  omp_set_num_threads(n != 0 ? static_cast<int>(n) : omp_get_num_procs());
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace tinylm
