#include "tinylm/kernels/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinylm/kernels/vec.h"

namespace tinylm::kernels {
namespace {

using vec::Vec;

// y += a · x over D elements.
template <class T>
inline void axpy(T* y, T a, const T* x, int64_t D) {
  constexpr int64_t W = vec::kLanes<T>;
  for (int64_t c = 0; c < D; c += W) {
    const int64_t w = std::min(W, D - c);
    vec::store_n(y + c, vec::load_n(y + c, w) + a * vec::load_n(x + c, w), w);
  }
}

template <class T>
inline T dot(const T* a, const T* b, int64_t D) {
  constexpr int64_t W = vec::kLanes<T>;
  Vec<T> acc = {};
  for (int64_t c = 0; c < D; c += W) {
    const int64_t w = std::min(W, D - c);
    acc += vec::load_n(a + c, w) * vec::load_n(b + c, w);
  }
  return vec::hsum(acc);
}

}  // namespace

template <class T>
void router_forward(T* probs, int32_t* topk, T* gates, int64_t rows, int64_t E, int64_t k) {
  for (int64_t r = 0; r < rows; ++r) {
    T* p = probs + r * E;
    T mx = p[0];
    for (int64_t i = 1; i < E; ++i) mx = std::max(mx, p[i]);
    T sum = T(0);
    for (int64_t i = 0; i < E; ++i) sum += p[i] = std::exp(p[i] - mx);
    const T inv = T(1) / sum;
    for (int64_t i = 0; i < E; ++i) p[i] *= inv;
    // Selection by repeated arg-max over the unselected experts: strict '>' keeps the lower
    // index on ties. E and k are small.
    int32_t* idx = topk + r * k;
    for (int64_t s = 0; s < k; ++s) {
      int32_t best = -1;
      for (int64_t i = 0; i < E; ++i) {
        bool taken = false;
        for (int64_t q = 0; q < s; ++q) taken |= idx[q] == i;
        if (!taken && (best < 0 || p[i] > p[best])) best = static_cast<int32_t>(i);
      }
      idx[s] = best;
    }
    T total = T(0);
    for (int64_t s = 0; s < k; ++s) total += p[idx[s]];
    for (int64_t s = 0; s < k; ++s) gates[r * k + s] = p[idx[s]] / total;
  }
}

template <class T>
void router_gates_backward(T* dprobs, const T* dgates, const T* probs, const int32_t* topk, const T* gates,
                           int64_t rows, int64_t E, int64_t k) {
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* idx = topk + r * k;
    const T* g = gates + r * k;
    const T* dg = dgates + r * k;
    T* dp = dprobs + r * E;
    T total = T(0), gdg = T(0);
    for (int64_t s = 0; s < k; ++s) {
      total += probs[r * E + idx[s]];
      gdg += g[s] * dg[s];
    }
    for (int64_t i = 0; i < E; ++i) dp[i] = T(0);
    for (int64_t s = 0; s < k; ++s) dp[idx[s]] = (dg[s] - gdg) / total;
  }
}

template <class T>
void router_softmax_backward(T* dlogits, const T* dprobs, const T* probs, int64_t rows, int64_t E) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* p = probs + r * E;
    const T* dp = dprobs + r * E;
    T s = T(0);
    for (int64_t i = 0; i < E; ++i) s += p[i] * dp[i];
    for (int64_t i = 0; i < E; ++i) dlogits[r * E + i] = p[i] * (dp[i] - s);
  }
}

template <class T>
double load_balance_forward(T* f, const T* probs, const int32_t* topk, int64_t rows, int64_t E, int64_t k) {
  double aux = 0.0;
  for (int64_t i = 0; i < E; ++i) {
    int64_t count = 0;
    for (int64_t j = 0; j < rows * k; ++j) count += topk[j] == i;
    double mean_p = 0.0;
    for (int64_t r = 0; r < rows; ++r) mean_p += static_cast<double>(probs[r * E + i]);
    mean_p /= static_cast<double>(rows);
    const double fi = static_cast<double>(count) / static_cast<double>(rows * k);
    f[i] = static_cast<T>(fi);
    aux += fi * mean_p;
  }
  return static_cast<double>(E) * aux;
}

template <class T>
void load_balance_backward(T* dprobs, const T* f, int64_t rows, int64_t E, double scale) {
  const double c = scale * static_cast<double>(E) / static_cast<double>(rows);
  for (int64_t i = 0; i < E; ++i) {
    const T d = static_cast<T>(c * static_cast<double>(f[i]));
    for (int64_t r = 0; r < rows; ++r) dprobs[r * E + i] += d;
  }
}

void moe_plan(int32_t* offsets, int32_t* row_token, int32_t* row_slot, const int32_t* topk, int64_t rows,
              int64_t E, int64_t k) {
  std::fill(offsets, offsets + E + 1, 0);
  for (int64_t j = 0; j < rows * k; ++j) ++offsets[topk[j] + 1];
  for (int64_t e = 0; e < E; ++e) offsets[e + 1] += offsets[e];
  // offsets[e] is now expert e's start; fill with a moving cursor per expert, then restore.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t s = 0; s < k; ++s) {
      const int32_t at = offsets[topk[r * k + s]]++;
      row_token[at] = static_cast<int32_t>(r);
      row_slot[at] = static_cast<int32_t>(s);
    }
  }
  for (int64_t e = E; e > 0; --e) offsets[e] = offsets[e - 1];
  offsets[0] = 0;
}

template <class T>
void moe_gather(T* xs, const T* x, const int32_t* row_token, int64_t n, int64_t D) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(xs + i * D, x + row_token[i] * D, static_cast<size_t>(D) * sizeof(T));
}

template <class T>
void moe_combine_forward(T* out, const T* ye, const int32_t* row_token, const int32_t* row_slot, const T* gates,
                         int64_t n, int64_t D, int64_t k) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = row_token[i];
    axpy(out + r * D, gates[r * k + row_slot[i]], ye + i * D, D);
  }
}

template <class T>
void moe_combine_backward(T* dye, T* dgates, const T* dout, const T* ye, const int32_t* row_token,
                          const int32_t* row_slot, const T* gates, int64_t n, int64_t D, int64_t k) {
  constexpr int64_t W = vec::kLanes<T>;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = row_token[i];
    const T g = gates[r * k + row_slot[i]];
    const T* d = dout + r * D;
    dgates[r * k + row_slot[i]] = dot(d, ye + i * D, D);
    for (int64_t c = 0; c < D; c += W) {
      const int64_t w = std::min(W, D - c);
      vec::store_n(dye + i * D + c, g * vec::load_n(d + c, w), w);
    }
  }
}

template <class T>
void moe_scatter_add(T* dx, const T* dxs, const int32_t* row_token, int64_t n, int64_t D) {
  for (int64_t i = 0; i < n; ++i) axpy(dx + row_token[i] * D, T(1), dxs + i * D, D);
}

#define TINYLM_MOE_INSTANTIATE(T)                                                                           \
  template void router_forward<T>(T*, int32_t*, T*, int64_t, int64_t, int64_t);                             \
  template void router_gates_backward<T>(T*, const T*, const T*, const int32_t*, const T*, int64_t, int64_t,  \
                                         int64_t);                                                            \
  template void router_softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);                        \
  template double load_balance_forward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);          \
  template void load_balance_backward<T>(T*, const T*, int64_t, int64_t, double);                            \
  template void moe_gather<T>(T*, const T*, const int32_t*, int64_t, int64_t);                               \
  template void moe_combine_forward<T>(T*, const T*, const int32_t*, const int32_t*, const T*, int64_t,       \
                                       int64_t, int64_t);                                                     \
  template void moe_combine_backward<T>(T*, T*, const T*, const T*, const int32_t*, const int32_t*, const T*, \
                                        int64_t, int64_t, int64_t);                                           \
  template void moe_scatter_add<T>(T*, const T*, const int32_t*, int64_t, int64_t);
TINYLM_MOE_INSTANTIATE(float)
TINYLM_MOE_INSTANTIATE(double)
#undef TINYLM_MOE_INSTANTIATE

}  // namespace tinylm::kernels
