#pragma once
// The CPU backend: what a model's layer loop (models/gpt2/trainer.cpp) calls to hold its arrays
// and run its ops, on host memory. A backend provides
//   Array<U>      where values of U live: a pointer here (a device range on a GPU), with
//                 `array + n` the array from element n on;
//   Arena         one block of memory for a model's activations, sized by a Planner;
//   Planner       the model's activations planned in one arena: a first pass counts
//                 (alloc returns empty arrays), a second hands the arena out;
//   the ops       each with its CPU kernel's name and arguments (kernels/<op>/*.h), plus add,
//                 zero and copy_in for what the loop did by hand.
// Each op here is its kernel's call, inlined: the loop written against the backend compiles to
// the code it was before.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tinylm/core/arena.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/loss/cross_entropy.h"
#include "tinylm/kernels/matmul/bias.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/norm/layernorm.h"

namespace tinylm::backend {

struct Cpu {
  template <class U>
  using Array = U*;
  template <class U>
  using Vector = std::vector<U>;  // scratch an Array lives in
  using Arena = tinylm::Arena;
  static constexpr size_t kParamAlign = 1;     // parameters packed, as files hold them
  static constexpr bool kBf16Operands = true;  // products of bf16 operands (where oneDNN has them)

  // Counts bytes on the first pass of a plan, hands out arena memory on the second.
  struct Planner {
    Arena* arena = nullptr;
    size_t bytes = 0, largest = 0;
    template <class U>
    U* alloc(size_t n) {
      if (n == 0) return nullptr;
      if (!arena) {
        bytes += Arena::footprint<U>(n);
        largest = std::max(largest, Arena::footprint<U>(n));
        return nullptr;
      }
      return arena->alloc<U>(n).data();
    }
  };

  Arena make_arena(size_t bytes) const { return Arena(bytes); }
  // v holding n values (its contents kept up to n), as an Array.
  template <class U>
  U* sized(std::vector<U>& v, size_t n) const {
    v.resize(n);
    return v.data();
  }

#define TINYLM_CPU_OP(name)                            \
  template <class... Args>                             \
  decltype(auto) name(Args&&... args) const {          \
    return kernels::name(std::forward<Args>(args)...); \
  }
  TINYLM_CPU_OP(dropout_forward)
  TINYLM_CPU_OP(dropout_backward)
  TINYLM_CPU_OP(layernorm_forward)
  TINYLM_CPU_OP(layernorm_backward)
  TINYLM_CPU_OP(gelu_forward)
  TINYLM_CPU_OP(gelu_backward)
  TINYLM_CPU_OP(causal_attention_forward)
  TINYLM_CPU_OP(causal_attention_backward)
  TINYLM_CPU_OP(causal_attention_scratch_size)
  TINYLM_CPU_OP(bf16_gemm_is_native)
  TINYLM_CPU_OP(cross_entropy_forward)
  TINYLM_CPU_OP(cross_entropy_backward)
  TINYLM_CPU_OP(gemm)
  TINYLM_CPU_OP(add_bias)
  TINYLM_CPU_OP(bias_backward)
  TINYLM_CPU_OP(convert)
  TINYLM_CPU_OP(round_to_bf16)
  TINYLM_CPU_OP(round_to_f16)
#undef TINYLM_CPU_OP

  // The embeddings take the vocabulary's size too (a device checks its table's range with it).
  template <class T, class Table>
  void embedding_forward(T* x, const int32_t* tokens, const Table* table, int64_t /*vocab*/,
                         const T* positions, int64_t rows, int64_t C, int64_t first,
                         int64_t period) const {
    kernels::embedding_forward(x, tokens, table, positions, rows, C, first, period);
  }
  template <class T>
  void embedding_backward(T* dtable, int64_t /*vocab*/, T* dpositions, const T* dx,
                          const int32_t* tokens, int64_t rows, int64_t C, int64_t period) const {
    kernels::embedding_backward(dtable, dpositions, dx, tokens, rows, C, period);
  }

  // y = a + b over rows of width n (rows split across threads). An element costs two loads
  // and a store besides the add: counted as one operation, a training batch's residual (768
  // rows of 128 in nanoGPT's CPU recipe) stayed on one thread while the other waited.
  template <class T>
  void add(T* y, const T* a, const T* b, int64_t rows, int64_t n) const {
    parallel_for(0, rows, grain_for(3 * n), [&](int64_t r) {
      for (int64_t i = r * n; i < (r + 1) * n; ++i) y[i] = a[i] + b[i];
    });
  }
  template <class T>
  void zero(T* p, int64_t n) const {
    std::fill(p, p + n, T(0));
  }
  template <class T>
  void copy(T* dst, const T* src, int64_t n) const {
    std::copy(src, src + n, dst);
  }
  // The host's values into an array.
  template <class T>
  void copy_in(T* dst, std::span<const T> src) const {
    std::copy(src.begin(), src.end(), dst);
  }
};

}  // namespace tinylm::backend
