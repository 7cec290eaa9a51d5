#include "tinylm/kernels/mixer/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tinylm/kernels/cpu/vec.h"

TINYLM_LEVEL_BEGIN

namespace {

// y += a · x over D elements.
TINYLM_INLINE void axpy(float* y, float a, const float* x, int64_t D) {
  for (int64_t c = 0; c < D; c += kLanes) {
    const int64_t w = std::min(kLanes, D - c);
    store_n(y + c, fma(a, load_n(x + c, w), load_n(y + c, w)), w);
  }
}

}  // namespace

void moe_combine_forward(float* out, const float* ye, const int32_t* row_token,
                         const int32_t* row_slot, const float* gates, int64_t n, int64_t D,
                         int64_t k) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = row_token[i];
    axpy(out + r * D, gates[r * k + row_slot[i]], ye + i * D, D);
  }
}

void moe_combine_backward(float* dye, float* dgates, const float* dout, const float* ye,
                          const int32_t* row_token, const int32_t* row_slot, const float* gates,
                          int64_t n, int64_t D, int64_t k) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = row_token[i];
    const float g = gates[r * k + row_slot[i]];
    const float* d = dout + r * D;
    f32x16 acc{};
    for (int64_t c = 0; c < D; c += kLanes) {
      const int64_t w = std::min(kLanes, D - c);
      const f32x16 dv = load_n(d + c, w);
      acc = fma(dv, load_n(ye + i * D + c, w), acc);
      store_n(dye + i * D + c, g * dv, w);
    }
    dgates[r * k + row_slot[i]] = hsum(acc);
  }
}

void moe_scatter_add(float* dx, const float* dxs, const int32_t* row_token, int64_t n, int64_t D) {
  for (int64_t i = 0; i < n; ++i) {
    float* y = dx + row_token[i] * D;
    const float* x = dxs + i * D;
    for (int64_t c = 0; c < D; c += kLanes) {
      const int64_t w = std::min(kLanes, D - c);
      store_n(y + c, load_n(y + c, w) + load_n(x + c, w), w);
    }
  }
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

// The float instances of the templates below run the active level's.
#define TINYLM_MOE_ENTRIES(X)                                                                   \
  X(void moe_combine_forward(float* out, const float* ye, const int32_t* row_token,             \
                             const int32_t* row_slot, const float* gates, int64_t n, int64_t D, \
                             int64_t k),                                                        \
    moe_combine_forward, (out, ye, row_token, row_slot, gates, n, D, k))                        \
  X(void moe_combine_backward(float* dye, float* dgates, const float* dout, const float* ye,    \
                              const int32_t* row_token, const int32_t* row_slot,                \
                              const float* gates, int64_t n, int64_t D, int64_t k),             \
    moe_combine_backward, (dye, dgates, dout, ye, row_token, row_slot, gates, n, D, k))         \
  X(void moe_scatter_add(float* dx, const float* dxs, const int32_t* row_token, int64_t n,      \
                         int64_t D),                                                            \
    moe_scatter_add, (dx, dxs, row_token, n, D))
TINYLM_ACTIVE_ENTRIES(TINYLM_MOE_ENTRIES)

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
void router_gates_backward(T* dprobs, const T* dgates, const T* probs, const int32_t* topk,
                           const T* gates, int64_t rows, int64_t E, int64_t k) {
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
double load_balance_forward(T* f, const T* probs, const int32_t* topk, int64_t rows, int64_t E,
                            int64_t k) {
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

void moe_plan(int32_t* offsets, int32_t* row_token, int32_t* row_slot, const int32_t* topk,
              int64_t rows, int64_t E, int64_t k) {
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
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(xs + i * D, x + row_token[i] * D, static_cast<size_t>(D) * sizeof(T));
}

template <class T>
void moe_combine_forward(T* out, const T* ye, const int32_t* row_token, const int32_t* row_slot,
                         const T* gates, int64_t n, int64_t D, int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    active::moe_combine_forward(out, ye, row_token, row_slot, gates, n, D, k);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = row_token[i];
      const T g = gates[r * k + row_slot[i]];
      for (int64_t c = 0; c < D; ++c) out[r * D + c] = std::fma(g, ye[i * D + c], out[r * D + c]);
    }
  }
}

template <class T>
void moe_combine_backward(T* dye, T* dgates, const T* dout, const T* ye, const int32_t* row_token,
                          const int32_t* row_slot, const T* gates, int64_t n, int64_t D,
                          int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    active::moe_combine_backward(dye, dgates, dout, ye, row_token, row_slot, gates, n, D, k);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = row_token[i];
      const T g = gates[r * k + row_slot[i]];
      T acc = 0;
      for (int64_t c = 0; c < D; ++c) {
        acc = std::fma(dout[r * D + c], ye[i * D + c], acc);
        dye[i * D + c] = g * dout[r * D + c];
      }
      dgates[r * k + row_slot[i]] = acc;
    }
  }
}

template <class T>
void moe_scatter_add(T* dx, const T* dxs, const int32_t* row_token, int64_t n, int64_t D) {
  if constexpr (std::is_same_v<T, float>) {
    active::moe_scatter_add(dx, dxs, row_token, n, D);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < D; ++c) dx[row_token[i] * D + c] += dxs[i * D + c];
    }
  }
}
#define TINYLM_MOE_INSTANTIATE(T)                                                              \
  template void router_forward<T>(T*, int32_t*, T*, int64_t, int64_t, int64_t);                \
  template void router_gates_backward<T>(T*, const T*, const T*, const int32_t*, const T*,     \
                                         int64_t, int64_t, int64_t);                           \
  template void router_softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);          \
  template double load_balance_forward<T>(T*, const T*, const int32_t*, int64_t, int64_t,      \
                                          int64_t);                                            \
  template void load_balance_backward<T>(T*, const T*, int64_t, int64_t, double);              \
  template void moe_gather<T>(T*, const T*, const int32_t*, int64_t, int64_t);                 \
  template void moe_combine_forward<T>(T*, const T*, const int32_t*, const int32_t*, const T*, \
                                       int64_t, int64_t, int64_t);                             \
  template void moe_combine_backward<T>(T*, T*, const T*, const T*, const int32_t*,            \
                                        const int32_t*, const T*, int64_t, int64_t, int64_t);  \
  template void moe_scatter_add<T>(T*, const T*, const int32_t*, int64_t, int64_t);
TINYLM_MOE_INSTANTIATE(float)
TINYLM_MOE_INSTANTIATE(double)
#undef TINYLM_MOE_INSTANTIATE

}  // namespace tinylm::kernels
#endif
