#include "tinylm/kernels/cross_entropy_train.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cast.h"
#include "tinylm/kernels/train_simd.h"

namespace tinylm::kernels {

namespace {
// log(sum_j exp(x[j])) of one float row: the max, then the sum of exp(x - max) in 16 lanes.
float row_logsumexp(const float* x, int64_t V) {
  simd::f32x16 m = simd::splat(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 16 <= V; i += 16) m = simd::vmax(m, simd::load(x + i));
  float mx = simd::hmax(m);
  for (; i < V; ++i) mx = std::max(mx, x[i]);
  simd::f32x16 s{};
  i = 0;
  for (; i + 16 <= V; i += 16) s += simd::exp(simd::load(x + i) - mx);
  float sum = simd::hsum(s);
  for (; i < V; ++i) sum += simd::exp(simd::splat(x[i] - mx))[0];
  return mx + std::log(sum);
}

// Calls store16(i, v) / store1(i, v) with v = exp(x - lse) * scale over a float row.
template <class Store16, class Store1>
void softmax_row(const float* x, float lse, float scale, int64_t V, Store16&& store16, Store1&& store1) {
  int64_t i = 0;
  for (; i + 16 <= V; i += 16) store16(i, simd::exp(simd::load(x + i) - lse) * scale);
  for (; i < V; ++i) store1(i, simd::exp(simd::splat(x[i] - lse))[0] * scale);
}
}  // namespace

template <class T>
double cross_entropy_train_forward(T* losses, T* lse, const T* logits, const int32_t* targets,
                                   int64_t rows, int64_t V) {
  parallel_for(0, rows, simd::grain_for(8 * V), [&](int64_t r) {
    const T* x = logits + r * V;
    T l;
    if constexpr (std::is_same_v<T, float>) {
      l = row_logsumexp(x, V);
    } else {
      T mx = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < V; ++j) mx = std::max(mx, x[j]);
      T sum = 0;
      for (int64_t j = 0; j < V; ++j) sum += std::exp(x[j] - mx);
      l = mx + std::log(sum);
    }
    lse[r] = l;
    losses[r] = l - x[targets[r]];
  });
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) total += losses[r];
  return total;
}

template <class T>
void cross_entropy_train_backward(T* dlogits, const T* logits, const T* lse,
                                  const int32_t* targets, int64_t rows, int64_t V, T scale) {
  parallel_for(0, rows, simd::grain_for(8 * V), [&](int64_t r) {
    const T* x = logits + r * V;
    T* g = dlogits + r * V;
    if constexpr (std::is_same_v<T, float>) {
      softmax_row(
          x, lse[r], scale, V, [&](int64_t i, simd::f32x16 v) { simd::store(g + i, v); },
          [&](int64_t i, float v) { g[i] = v; });
    } else {
      for (int64_t j = 0; j < V; ++j) g[j] = std::exp(x[j] - lse[r]) * scale;
    }
    g[targets[r]] -= scale;
  });
}

void cross_entropy_train_backward_bf16(Bf16* dlogits, const float* logits, const float* lse,
                                       const int32_t* targets, int64_t rows, int64_t V,
                                       float scale) {
  parallel_for(0, rows, simd::grain_for(8 * V), [&](int64_t r) {
    const float* x = logits + r * V;
    Bf16* g = dlogits + r * V;
    softmax_row(
        x, lse[r], scale, V, [&](int64_t i, simd::f32x16 v) { store_bf16x16(g + i, v); },
        [&](int64_t i, float v) { from_float(g[i], v); });
    // The target's entry from its float value, then rounded once.
    const int32_t t = targets[r];
    from_float(g[t], simd::exp(simd::splat(x[t] - lse[r]))[0] * scale - scale);
  });
}

template double cross_entropy_train_forward<float>(float*, float*, const float*, const int32_t*,
                                                   int64_t, int64_t);
template double cross_entropy_train_forward<double>(double*, double*, const double*,
                                                    const int32_t*, int64_t, int64_t);
template void cross_entropy_train_backward<float>(float*, const float*, const float*,
                                                  const int32_t*, int64_t, int64_t, float);
template void cross_entropy_train_backward<double>(double*, const double*, const double*,
                                                   const int32_t*, int64_t, int64_t, double);

}  // namespace tinylm::kernels
