#include "tinylm/kernels/matmul/bias.h"

#include <algorithm>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

void add_bias(float* y, const float* b, int64_t rows, int64_t n) {
  parallel_for(0, rows, grain_for(n), [&](int64_t r) {
    float* yr = y + r * n;
    for (int64_t i = 0; i < n; i += kLanes) {
      const int64_t w = std::min(kLanes, n - i);
      store_n(yr + i, load_n(yr + i, w) + load_n(b + i, w), w);
    }
  });
}

void bias_backward(float* db, const float* dy, int64_t rows, int64_t n) {
  constexpr int64_t kBlock = 256;
  parallel_for(0, (n + kBlock - 1) / kBlock, grain_for(rows * kBlock), [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(n, c0 + kBlock);
    for (int64_t c = c0; c < c1; c += kLanes) {
      const int64_t w = std::min(kLanes, c1 - c);
      f32x16 acc = load_n(db + c, w);
      for (int64_t r = 0; r < rows; ++r) acc += load_n(dy + r * n + c, w);
      store_n(db + c, acc, w);
    }
  });
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_BIAS_ENTRIES(X)                                                                   \
  X(void add_bias(float* y, const float* b, int64_t rows, int64_t n), add_bias, (y, b, rows, n)) \
  X(void bias_backward(float* db, const float* dy, int64_t rows, int64_t n), bias_backward,      \
    (db, dy, rows, n))
TINYLM_PUBLIC_ENTRIES(TINYLM_BIAS_ENTRIES)

void add_bias(double* y, const double* b, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
  }
}
void bias_backward(double* db, const double* dy, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) db[i] += dy[r * n + i];
  }
}

}  // namespace tinylm::kernels
#endif
