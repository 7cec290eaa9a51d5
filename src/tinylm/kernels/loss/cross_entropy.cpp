#include "tinylm/kernels/loss/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec_math.h"

namespace tinylm::kernels {
namespace {
// Each row's loss, -log softmax(x)[target], from row_lse (its log-sum-exp, which writes the row's
// exps over its logits and their sum to *sum), 1 / that sum to norm (backward_exp reads the
// exps and norm); returns the losses' sum in double. The f32 (per level) and double entries.
template <class T, class RowLse>
double forward_inplace(T* losses, T* norm, T* logits, const int32_t* targets, int64_t rows,
                       int64_t V, RowLse row_lse) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    T* x = logits + r * V;
    const T target_logit = x[targets[r]];
    T sum;
    const T loss = row_lse(x, V, x, &sum) - target_logit;
    norm[r] = T{1} / sum;
    if (losses) losses[r] = loss;
    total += loss;
  }
  return total;
}
}  // namespace
}  // namespace tinylm::kernels

TINYLM_LEVEL_BEGIN

namespace {

// log(sum_j exp(x[j])) of one row: the max, then the sum of exp(x - max) in 16 lanes. With e
// (which may equal x), the exps are also written there, and *sum receives their sum.
float row_logsumexp(const float* x, int64_t V, float* e = nullptr, float* sum_out = nullptr) {
  f32x16 m = splat(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= V; i += kLanes) m = max(m, load(x + i));
  float mx = hmax(m);
  for (; i < V; ++i) mx = std::max(mx, x[i]);
  f32x16 s{};
  i = 0;
  for (; i + kLanes <= V; i += kLanes) {
    const f32x16 ei = exp(load(x + i) - mx);
    if (e) store(e + i, ei);
    s += ei;
  }
  float sum = hsum(s);
  for (; i < V; ++i) {
    const float ei = exp1(x[i] - mx);
    if (e) e[i] = ei;
    sum += ei;
  }
  if (sum_out) *sum_out = sum;
  return mx + std::log(sum);
}

// store16(i, v) / store1(i, v) with v = exp(x - lse) * scale over a row.
template <class Store16, class Store1>
void softmax_row(const float* x, float lse, float scale, int64_t V, Store16&& store16,
                 Store1&& store1) {
  int64_t i = 0;
  for (; i + kLanes <= V; i += kLanes) store16(i, exp(load(x + i) - lse) * scale);
  for (; i < V; ++i) store1(i, exp1(x[i] - lse) * scale);
}

}  // namespace

double cross_entropy_forward(float* losses, float* lse, const float* logits, const int32_t* targets,
                             int64_t rows, int64_t V) {
  double total = 0;
  parallel_for(0, rows, grain_for(8 * V), [&](int64_t r) {
    const float* x = logits + r * V;
    lse[r] = row_logsumexp(x, V);
  });
  for (int64_t r = 0; r < rows; ++r) {
    const float loss = lse[r] - logits[r * V + targets[r]];
    if (losses) losses[r] = loss;
    total += loss;
  }
  return total;
}

void cross_entropy_backward(float* dlogits, const float* logits, const float* lse,
                            const int32_t* targets, int64_t rows, int64_t V, float scale) {
  parallel_for(0, rows, grain_for(8 * V), [&](int64_t r) {
    float* g = dlogits + r * V;
    softmax_row(
        logits + r * V, lse[r], scale, V, [&](int64_t i, f32x16 v) { store(g + i, v); },
        [&](int64_t i, float v) { g[i] = v; });
    g[targets[r]] -= scale;
  });
}

double cross_entropy_forward_inplace(float* losses, float* norm, float* logits,
                                     const int32_t* targets, int64_t rows, int64_t V) {
  return forward_inplace(losses, norm, logits, targets, rows, V, row_logsumexp);
}

void cross_entropy_backward_exp(float* dlogits, const float* e, const float* norm,
                                const int32_t* targets, int64_t rows, int64_t V, float scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* er = e + r * V;
    float* g = dlogits + r * V;
    const float f = norm[r] * scale;
    int64_t i = 0;
    for (; i + kLanes <= V; i += kLanes) store(g + i, load(er + i) * f);
    for (; i < V; ++i) g[i] = er[i] * f;
    g[targets[r]] -= scale;
  }
}

void cross_entropy_backward(Bf16* dlogits, const float* logits, const float* lse,
                            const int32_t* targets, int64_t rows, int64_t V, float scale) {
  parallel_for(0, rows, grain_for(8 * V), [&](int64_t r) {
    const float* x = logits + r * V;
    Bf16* g = dlogits + r * V;
    softmax_row(
        x, lse[r], scale, V, [&](int64_t i, f32x16 v) { store(g + i, v); },
        [&](int64_t i, float v) { from_float(g[i], v); });
    const int32_t t = targets[r];
    from_float(g[t], exp1(x[t] - lse[r]) * scale - scale);
  });
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_CROSS_ENTROPY_ENTRIES(X)                                                            \
  X(double cross_entropy_forward(float* losses, float* lse, const float* logits,                   \
                                 const int32_t* targets, int64_t rows, int64_t V),                 \
    cross_entropy_forward, (losses, lse, logits, targets, rows, V))                                \
  X(void cross_entropy_backward(float* dlogits, const float* logits, const float* lse,             \
                                const int32_t* targets, int64_t rows, int64_t V, float scale),     \
    cross_entropy_backward, (dlogits, logits, lse, targets, rows, V, scale))                       \
  X(void cross_entropy_backward(Bf16* dlogits, const float* logits, const float* lse,              \
                                const int32_t* targets, int64_t rows, int64_t V, float scale),     \
    cross_entropy_backward, (dlogits, logits, lse, targets, rows, V, scale))                       \
  X(double cross_entropy_forward_inplace(float* losses, float* norm, float* logits,                \
                                         const int32_t* targets, int64_t rows, int64_t V),         \
    cross_entropy_forward_inplace, (losses, norm, logits, targets, rows, V))                       \
  X(void cross_entropy_backward_exp(float* dlogits, const float* e, const float* norm,             \
                                    const int32_t* targets, int64_t rows, int64_t V, float scale), \
    cross_entropy_backward_exp, (dlogits, e, norm, targets, rows, V, scale))
TINYLM_PUBLIC_ENTRIES(TINYLM_CROSS_ENTROPY_ENTRIES)

namespace {
// A row's log(sum_j exp(x[j])) in double, in order: the max, then the sum of exp(x - max). With
// e (which may equal x) the exps are also written there, and *sum receives their sum.
double row_logsumexp(const double* x, int64_t V, double* e = nullptr, double* sum_out = nullptr) {
  const double mx = *std::max_element(x, x + V);
  double sum = 0;
  for (int64_t j = 0; j < V; ++j) {
    const double ej = std::exp(x[j] - mx);
    if (e) e[j] = ej;
    sum += ej;
  }
  if (sum_out) *sum_out = sum;
  return mx + std::log(sum);
}
}  // namespace

double cross_entropy_forward_inplace(double* losses, double* norm, double* logits,
                                     const int32_t* targets, int64_t rows, int64_t V) {
  return forward_inplace(losses, norm, logits, targets, rows, V, row_logsumexp);
}
void cross_entropy_backward_exp(double* dlogits, const double* e, const double* norm,
                                const int32_t* targets, int64_t rows, int64_t V, double scale) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < V; ++j) dlogits[r * V + j] = e[r * V + j] * norm[r] * scale;
    dlogits[r * V + targets[r]] -= scale;
  }
}

double cross_entropy_forward(double* losses, double* lse, const double* logits,
                             const int32_t* targets, int64_t rows, int64_t V) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = logits + r * V;
    lse[r] = row_logsumexp(x, V);
    const double loss = lse[r] - x[targets[r]];
    if (losses) losses[r] = loss;
    total += loss;
  }
  return total;
}
void cross_entropy_backward(double* dlogits, const double* logits, const double* lse,
                            const int32_t* targets, int64_t rows, int64_t V, double scale) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < V; ++j)
      dlogits[r * V + j] = std::exp(logits[r * V + j] - lse[r]) * scale;
    dlogits[r * V + targets[r]] -= scale;
  }
}

}  // namespace tinylm::kernels
#endif
