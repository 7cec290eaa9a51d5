#include "tinylm/kernels/activation/dropout.h"

#include <algorithm>
#include <cmath>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/activation/dropout_draw.h"
#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

constexpr int64_t kChunk = 64 * kDropoutGroup;  // elements per parallel task

template <class T>
void forward(T* y, uint8_t* mask, const T* x, int64_t n, uint32_t threshold, T scale,
             DropoutSite where) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk), [&](int64_t c) {
    const int64_t e0 = c * kChunk, e1 = std::min(n, e0 + kChunk);
    dropout_mask_range(mask, e0, e1, threshold, where);
    for (int64_t e = e0; e < e1; ++e) y[e] = mask[e] ? x[e] * scale : T(0);
  });
}

template <class T>
void backward(T* dx, const T* dy, const uint8_t* mask, int64_t n, T scale) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk), [&](int64_t c) {
    const int64_t e1 = std::min(n, (c + 1) * kChunk);
    for (int64_t e = c * kChunk; e < e1; ++e) dx[e] = mask[e] ? dy[e] * scale : T(0);
  });
}

}  // namespace

void dropout_mask(uint8_t* mask, int64_t n, uint32_t threshold, DropoutSite where) {
  parallel_for(0, (n + kChunk - 1) / kChunk, grain_for(kChunk), [&](int64_t c) {
    dropout_mask_range(mask, c * kChunk, std::min(n, (c + 1) * kChunk), threshold, where);
  });
}
void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, uint32_t threshold,
                     float scale, DropoutSite where) {
  forward(y, mask, x, n, threshold, scale, where);
}
void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, uint32_t threshold,
                     double scale, DropoutSite where) {
  forward(y, mask, x, n, threshold, scale, where);
}
void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, float scale) {
  backward(dx, dy, mask, n, scale);
}
void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n, double scale) {
  backward(dx, dy, mask, n, scale);
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// The public functions take a rate and check it; the levels take its threshold and scale.
#define TINYLM_DROPOUT_ENTRIES(X)                                                                  \
  X(void dropout_mask(uint8_t* mask, int64_t n, uint32_t threshold, DropoutSite where),            \
    dropout_mask, (mask, n, threshold, where))                                                     \
  X(void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, uint32_t threshold,   \
                         float scale, DropoutSite where),                                          \
    dropout_forward, (y, mask, x, n, threshold, scale, where))                                     \
  X(void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, uint32_t threshold, \
                         double scale, DropoutSite where),                                         \
    dropout_forward, (y, mask, x, n, threshold, scale, where))                                     \
  X(void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n,              \
                          float scale),                                                            \
    dropout_backward, (dx, dy, mask, n, scale))                                                    \
  X(void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n,            \
                          double scale),                                                           \
    dropout_backward, (dx, dy, mask, n, scale))
TINYLM_ACTIVE_ENTRIES(TINYLM_DROPOUT_ENTRIES)

void check_dropout(int64_t n, float rate, const DropoutSite& where) {
  check(rate >= 0.0f && rate < 1.0f, "dropout: rate must be in [0, 1), got ", rate);
  constexpr uint64_t kMax = uint64_t{1} << 34;  // the counter's word holds g / 4
  check(n >= 0 && where.first <= kMax && static_cast<uint64_t>(n) <= kMax - where.first,
        "dropout: elements ", where.first, " + ", n, " are out of range");
}
// Keeps u >= rate, i.e. (w >> 8) >= ceil(rate * 2^24), exactly.
uint32_t dropout_keep_threshold(float rate) {
  return static_cast<uint32_t>(std::ceil(static_cast<double>(rate) * 16777216.0));
}

namespace {
template <class T>
T keep_scale(float rate) {
  return T(1) / (T(1) - static_cast<T>(rate));
}
}  // namespace

float dropout_keep_scale(float rate) { return keep_scale<float>(rate); }

void dropout_mask(uint8_t* mask, int64_t n, float rate, DropoutSite where) {
  check_dropout(n, rate, where);
  active::dropout_mask(mask, n, dropout_keep_threshold(rate), where);
}
void dropout_forward(float* y, uint8_t* mask, const float* x, int64_t n, float rate,
                     DropoutSite where) {
  check_dropout(n, rate, where);
  active::dropout_forward(y, mask, x, n, dropout_keep_threshold(rate), keep_scale<float>(rate),
                          where);
}
void dropout_forward(double* y, uint8_t* mask, const double* x, int64_t n, float rate,
                     DropoutSite where) {
  check_dropout(n, rate, where);
  active::dropout_forward(y, mask, x, n, dropout_keep_threshold(rate), keep_scale<double>(rate),
                          where);
}
void dropout_backward(float* dx, const float* dy, const uint8_t* mask, int64_t n, float rate) {
  active::dropout_backward(dx, dy, mask, n, keep_scale<float>(rate));
}
void dropout_backward(double* dx, const double* dy, const uint8_t* mask, int64_t n, float rate) {
  active::dropout_backward(dx, dy, mask, n, keep_scale<double>(rate));
}

}  // namespace tinylm::kernels
#endif
