#include "tinylm/kernels/embedding/embedding.h"

#include <algorithm>

#include "tinylm/core/parallel.h"
#include "tinylm/kernels/cpu/vec.h"
#include "tinylm/kernels/matmul/small.h"

TINYLM_LEVEL_BEGIN

namespace {

template <class W>
void forward(float* x, const int32_t* tokens, const W* table, const float* positions, int64_t rows,
             int64_t C, int64_t first, int64_t period) {
  parallel_for(0, rows, grain_for(C), [&](int64_t r) {
    const W* e = table + static_cast<int64_t>(tokens[r]) * C;
    const float* p = positions ? positions + (first + r % period) * C : nullptr;
    float* xr = x + r * C;
    int64_t i = 0;
    for (; i + kLanes <= C; i += kLanes) store(xr + i, p ? load(e + i) + load(p + i) : load(e + i));
    for (; i < C; ++i) xr[i] = p ? to_float(e[i]) + p[i] : to_float(e[i]);
  });
}

}  // namespace

void embedding_forward(float* x, const int32_t* tokens, const float* table, const float* positions,
                       int64_t rows, int64_t C, int64_t first, int64_t period) {
  forward(x, tokens, table, positions, rows, C, first, period);
}
void embedding_forward(float* x, const int32_t* tokens, const Bf16* table, const float* positions,
                       int64_t rows, int64_t C, int64_t first, int64_t period) {
  forward(x, tokens, table, positions, rows, C, first, period);
}
void embedding_forward(float* x, const int32_t* tokens, const F16* table, const float* positions,
                       int64_t rows, int64_t C, int64_t first, int64_t period) {
  forward(x, tokens, table, positions, rows, C, first, period);
}

void embedding_backward(float* dtable, float* dpositions, const float* dx, const int32_t* tokens,
                        int64_t rows, int64_t C, int64_t period) {
  constexpr int64_t kBlock = 64;
  parallel_for(0, (C + kBlock - 1) / kBlock, grain_for(2 * rows * kBlock), [&](int64_t blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = dx + r * C;
      float* e = dtable + static_cast<int64_t>(tokens[r]) * C;
      float* p = dpositions ? dpositions + (r % period) * C : nullptr;
      for (int64_t i = c0; i < c1; i += kLanes) {
        const int64_t w = std::min(kLanes, c1 - i);
        const f32x16 gv = load_n(g + i, w);
        store_n(e + i, load_n(e + i, w) + gv, w);
        if (p) store_n(p + i, load_n(p + i, w) + gv, w);
      }
    }
  });
}

TINYLM_LEVEL_END

#if TINYLM_LEVEL_ONCE
namespace tinylm::kernels {

#define TINYLM_EMBEDDING_ENTRIES(X)                                                          \
  X(void embedding_forward(float* x, const int32_t* tokens, const float* table,              \
                           const float* positions, int64_t rows, int64_t C, int64_t first,   \
                           int64_t period),                                                  \
    embedding_forward, (x, tokens, table, positions, rows, C, first, period))                \
  X(void embedding_forward(float* x, const int32_t* tokens, const Bf16* table,               \
                           const float* positions, int64_t rows, int64_t C, int64_t first,   \
                           int64_t period),                                                  \
    embedding_forward, (x, tokens, table, positions, rows, C, first, period))                \
  X(void embedding_forward(float* x, const int32_t* tokens, const F16* table,                \
                           const float* positions, int64_t rows, int64_t C, int64_t first,   \
                           int64_t period),                                                  \
    embedding_forward, (x, tokens, table, positions, rows, C, first, period))                \
  X(void embedding_backward(float* dtable, float* dpositions, const float* dx,               \
                            const int32_t* tokens, int64_t rows, int64_t C, int64_t period), \
    embedding_backward, (dtable, dpositions, dx, tokens, rows, C, period))
TINYLM_PUBLIC_ENTRIES(TINYLM_EMBEDDING_ENTRIES)

void embedding_forward(double* x, const int32_t* tokens, const double* table,
                       const double* positions, int64_t rows, int64_t C, int64_t first,
                       int64_t period) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* e = table + static_cast<int64_t>(tokens[r]) * C;
    const double* p = positions ? positions + (first + r % period) * C : nullptr;
    for (int64_t i = 0; i < C; ++i) x[r * C + i] = p ? e[i] + p[i] : e[i];
  }
}
void embedding_backward(double* dtable, double* dpositions, const double* dx, const int32_t* tokens,
                        int64_t rows, int64_t C, int64_t period) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < C; ++i) {
      dtable[static_cast<int64_t>(tokens[r]) * C + i] += dx[r * C + i];
      if (dpositions) dpositions[(r % period) * C + i] += dx[r * C + i];
    }
  }
}

void tied_logits_forward(float* logits, const float* x, const float* tableT, int64_t rows,
                         int64_t D, int64_t V) {
  gemm_nn(rows, V, D, x, D, tableT, V, logits, V, false);
}
void tied_logits_forward(double* logits, const double* x, const double* tableT, int64_t rows,
                         int64_t D, int64_t V) {
  gemm_nn(rows, V, D, x, D, tableT, V, logits, V, false);
}
void tied_logits_backward(float* dx, float* dtable, const float* dlogits, const float* x,
                          const float* table, int64_t rows, int64_t D, int64_t V) {
  gemm_nn(rows, D, V, dlogits, V, table, D, dx, D, false);
  gemm_tn(V, D, rows, dlogits, V, x, D, dtable, D, true);
}
void tied_logits_backward(double* dx, double* dtable, const double* dlogits, const double* x,
                          const double* table, int64_t rows, int64_t D, int64_t V) {
  gemm_nn(rows, D, V, dlogits, V, table, D, dx, D, false);
  gemm_tn(V, D, rows, dlogits, V, x, D, dtable, D, true);
}

}  // namespace tinylm::kernels
#endif
