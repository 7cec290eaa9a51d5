#include "tinylm/kernels/activation/gelu.h"

#include <algorithm>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/activation/gelu_reference.h"
#include "tinylm/kernels/cpu/vec_math.h"

TINYLM_LEVEL_BEGIN

namespace {

constexpr int64_t kChunk = 4096;  // elements per parallel task (a multiple of kLanes)

// body(i0, i1) over [0, n) in chunks split across threads (inline when the range is small or
// the caller is already inside a parallel region, as EvermindLM's training is).
template <class Fn>
void chunked(int64_t n, Fn&& body) {
  parallel_for(0, (n + kChunk - 1) / kChunk, 4,
               [&](int64_t c) { body(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

// tanh is written through e = exp(2u): 1 + t = 2e/(1+e) and 1 − t = 2/(1+e), so
// gelu = x·e/(1+e) and gelu' = e/(1+e) + 2x·e/(1+e)²·√(2/π)(1 + 3·0.044715 x²), free of the
// cancellation in 1 + t for very negative x.
TINYLM_INLINE f32x16 tanh_arg(f32x16 x) {
  return static_cast<float>(reference::kGeluSqrt2OverPi) *
         (x + static_cast<float>(reference::kGeluCubic) * x * x * x);
}

}  // namespace

void gelu_forward(float* y, const float* x, int64_t n) {
  chunked(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i += kLanes) {
      // Lines asked for 4 KiB ahead, as in the backward: at the baby GPT's shapes a layer's
      // input comes from memory.
      __builtin_prefetch(x + std::min(i + 1024, n - 1), 0, 3);
      const int64_t w = std::min(kLanes, i1 - i);
      const f32x16 v = load_n(x + i, w);
      const f32x16 e = exp(2.0f * tanh_arg(v));
      store_n(y + i, v * (e / (1.0f + e)), w);
    }
  });
}

void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) {
  const float c = static_cast<float>(reference::kGeluSqrt2OverPi);
  const float c3 = static_cast<float>(3 * reference::kGeluCubic);
  chunked(n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i += kLanes) {
      // x was written in the forward, long before: lines asked for 4 KiB ahead (training ran
      // this pass at half its in-cache speed without them).
      const int64_t ahead = std::min(i + 1024, n - 1);
      __builtin_prefetch(x + ahead, 0, 3);
      __builtin_prefetch(dy + ahead, 0, 3);
      const int64_t w = std::min(kLanes, i1 - i);
      const f32x16 v = load_n(x + i, w);
      const f32x16 e = exp(2.0f * tanh_arg(v));
      const f32x16 r = 1.0f / (1.0f + e);
      const f32x16 s = e * r;  // never inf·0: e is at most ~2e38
      const f32x16 d = s + (2.0f * v) * (s * r) * c * (1.0f + c3 * v * v);
      store_n(dx + i, load_n(dy + i, w) * d, w);
    }
  });
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_GELU_ENTRIES(X)                                                                \
  X(void gelu_forward(float* y, const float* x, int64_t n), gelu_forward, (y, x, n))          \
  X(void gelu_backward(float* dx, const float* dy, const float* x, int64_t n), gelu_backward, \
    (dx, dy, x, n))
TINYLM_PUBLIC_ENTRIES(TINYLM_GELU_ENTRIES)

void gelu_forward(double* y, const double* x, int64_t n) { reference::gelu_forward(y, x, n); }
void gelu_backward(double* dx, const double* dy, const double* x, int64_t n) {
  reference::gelu_backward(dx, dy, x, n);
}

}  // namespace tinylm::kernels
#endif
