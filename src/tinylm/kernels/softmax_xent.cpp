#include "tinylm/kernels/softmax_xent.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {
namespace {

using vec::Vec;
constexpr int64_t kW = vec::kLanes<float>;

// One row of floats: probabilities in place, returns the sum of exponentials and the max.
inline void softmax_row_f32(float* l, int64_t V, float& mx_out, float& sum_out) {
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
    vec::store_n(l + i, vec::exp_f32(vec::load_n(l + i, w) - mx), w);
    acc += vec::load_n(l + i, w);  // zero past the row's end
  }
  const float sum = vec::hsum(acc);
  const float inv = 1.0f / sum;
  for (i = 0; i < V; i += kW) {
    const int64_t w = std::min(kW, V - i);
    vec::store_n(l + i, vec::load_n(l + i, w) * inv, w);
  }
  mx_out = mx;
  sum_out = sum;
}

}  // namespace

template <class T>
double softmax_xent_forward(T* logits, const int* targets, int64_t rows, int64_t V, int64_t ld) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    T* l = logits + r * ld;
    const T target_logit = l[targets[r]];
    if constexpr (std::is_same_v<T, float>) {
      float mx, sum;
      softmax_row_f32(l, V, mx, sum);
      total += std::log(static_cast<double>(sum)) - (static_cast<double>(target_logit) - mx);
    } else {
      T mx = l[0];
      for (int64_t i = 1; i < V; ++i) mx = std::max(mx, l[i]);
      T sum = T(0);
      for (int64_t i = 0; i < V; ++i) sum += l[i] = std::exp(l[i] - mx);
      const T inv = T(1) / sum;
      for (int64_t i = 0; i < V; ++i) l[i] *= inv;
      total += std::log(static_cast<double>(sum)) - (static_cast<double>(target_logit) - mx);
    }
  }
  return total;
}

template <class T>
void softmax_xent_backward(T* probs, const int* targets, int64_t rows, int64_t V, int64_t ld, T scale) {
  for (int64_t r = 0; r < rows; ++r) {
    T* p = probs + r * ld;
    const int t = targets[r];
    const T pt = p[t];
    for (int64_t i = 0; i < V; ++i) p[i] *= scale;
    p[t] = (pt - T(1)) * scale;
  }
}

template double softmax_xent_forward<float>(float*, const int*, int64_t, int64_t, int64_t);
template double softmax_xent_forward<double>(double*, const int*, int64_t, int64_t, int64_t);
template void softmax_xent_backward<float>(float*, const int*, int64_t, int64_t, int64_t, float);
template void softmax_xent_backward<double>(double*, const int*, int64_t, int64_t, int64_t, double);

}  // namespace tinylm::kernels
