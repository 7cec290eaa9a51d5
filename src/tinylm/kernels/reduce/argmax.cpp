#include "tinylm/kernels/reduce/argmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tinylm/core/error.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

constexpr int64_t kBlock = 1024;  // elements whose maximum is kept, so the search is one block

// The largest value of x[0, n) that is not NaN; -inf when there is none.
TINYLM_INLINE float block_max(const float* x, int64_t n) {
  f32x16 m = splat(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const f32x16 v = load(x + i);
    m = select_lt(m, v, v, m);  // (NaN compares false: never taken)
  }
  float s = hmax(m);
  for (; i < n; ++i) s = s < x[i] ? x[i] : s;
  return s;
}

}  // namespace

// One pass keeps each block's maximum; the answer is the first value equal to the largest, in
// the first block that holds it (== also matches -0 against +0, which max_element keeps first).
int64_t argmax(const float* x, int64_t n) {
  if (std::isnan(x[0])) return 0;
  float best = x[0];
  int64_t best_block = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const float m = block_max(x + b, std::min(kBlock, n - b));
    if (best < m) best = m, best_block = b;
  }
  const int64_t end = std::min(n, best_block + kBlock);
  for (int64_t i = best_block; i < end; ++i) {
    if (x[i] == best) return i;
  }
  return 0;  // (unreachable: best is x[0] or a value of its block)
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_ARGMAX_ENTRIES(X) X(int64_t argmax(const float* x, int64_t n), argmax, (x, n))
TINYLM_ACTIVE_ENTRIES(TINYLM_ARGMAX_ENTRIES)

int64_t argmax(const float* x, int64_t n) {
  check(n >= 1, "argmax of an empty array");
  return active::argmax(x, n);
}

}  // namespace tinylm::kernels
#endif
