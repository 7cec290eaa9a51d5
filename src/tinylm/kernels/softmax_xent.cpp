#include "tinylm/kernels/softmax_xent.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinylm/kernels/train_simd.h"
#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {
namespace {

using vec::Vec;
constexpr int64_t kW = vec::kLanes<float>;

// One row of floats: exp(l − max) in place; returns the max and the sum.
inline void exp_row_f32(float* l, int64_t V, float& mx_out, float& sum_out) {
  float mx = l[0];
  int64_t i = 0;
  if (V >= kW) {
    Vec<float> m = vec::load(l);
    for (i = kW; i + kW <= V; i += kW) {
      const Vec<float> v = vec::load(l + i);
      m = v > m ? v : m;
    }
    float lanes[kW];
    vec::store(lanes, m);
    mx = lanes[0];
    for (int64_t j = 1; j < kW; ++j) mx = std::max(mx, lanes[j]);
  }
  for (; i < V; ++i) mx = std::max(mx, l[i]);
  Vec<float> acc = {};
  for (i = 0; i < V; i += kW) {
    const int64_t w = std::min(kW, V - i);
    const Vec<float> e = simd::exp(vec::load_n(l + i, w) - mx);
    vec::store_n(l + i, e, w);
    acc += vec::load_n(l + i, w);  // zero past the row's end
  }
  mx_out = mx;
  sum_out = vec::hsum(acc);
}

}  // namespace

template <class T>
double softmax_xent_forward(T* logits, T* inv_sum, const int* targets, int64_t rows, int64_t V, int64_t ld) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    T* l = logits + r * ld;
    const T target_logit = l[targets[r]];
    T mx, sum;
    if constexpr (std::is_same_v<T, float>) {
      exp_row_f32(l, V, mx, sum);
    } else {
      mx = l[0];
      for (int64_t i = 1; i < V; ++i) mx = std::max(mx, l[i]);
      sum = T(0);
      for (int64_t i = 0; i < V; ++i) sum += l[i] = std::exp(l[i] - mx);
    }
    inv_sum[r] = T(1) / sum;
    total += std::log(static_cast<double>(sum)) - (static_cast<double>(target_logit) - mx);
  }
  return total;
}

template <class T>
void softmax_xent_backward(T* e, const T* inv_sum, const int* targets, int64_t rows, int64_t V, int64_t ld,
                           T scale) {
  for (int64_t r = 0; r < rows; ++r) {
    T* p = e + r * ld;
    const T f = inv_sum[r] * scale;
    for (int64_t i = 0; i < V; ++i) p[i] *= f;
    p[targets[r]] -= scale;
  }
}

template double softmax_xent_forward<float>(float*, float*, const int*, int64_t, int64_t, int64_t);
template double softmax_xent_forward<double>(double*, double*, const int*, int64_t, int64_t, int64_t);
template void softmax_xent_backward<float>(float*, const float*, const int*, int64_t, int64_t, int64_t, float);
template void softmax_xent_backward<double>(double*, const double*, const int*, int64_t, int64_t, int64_t,
                                             double);

}  // namespace tinylm::kernels
