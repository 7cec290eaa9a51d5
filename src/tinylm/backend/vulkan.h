#pragma once
// The Vulkan backend: what a model's layer loop (models/gpt2/train_steps.h) calls, on a GPU.
// backend/cpu.h says what a backend provides; here
//   Array<U>   is a DeviceArray: element `first` of a device buffer on (ops bind it as a View,
//              so a tensor's start must suit the device's offset alignment: the activations'
//              arena hands out 256-byte-aligned blocks, and parameters are laid out with
//              kParamAlign);
//   Arena      is one device buffer for all activations;
//   the ops    are kernels/vulkan's shaders, recorded on the backend's Context, which runs them
//              when the host next reads a result (the loss, at the end of each forward).
// Products take f32 operands only (kBf16Operands false): bf16 compute rounds its operands to
// bf16 values held as f32, the CPU trainer's path where oneDNN has no bf16 product, with the
// same products.
// Include only where TINYLM_HAVE_VULKAN is defined.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>

#include "tinylm/core/error.h"
#include "tinylm/kernels/activation/dropout.h"
#include "tinylm/kernels/cpu/half.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/vulkan/attention.h"
#include "tinylm/kernels/vulkan/cast.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/dropout.h"
#include "tinylm/kernels/vulkan/elementwise.h"
#include "tinylm/kernels/vulkan/embedding.h"
#include "tinylm/kernels/vulkan/loss.h"
#include "tinylm/kernels/vulkan/matmul.h"
#include "tinylm/kernels/vulkan/ops.h"

namespace tinylm::backend {

namespace vk = kernels::vulkan;

// Values of U from element `first` of a device buffer on; empty (false) without a buffer.
// 8- and 16-bit values are packed into 32-bit words, as the shaders read them.
template <class U>
struct DeviceArray {
  vk::Buffer* buffer = nullptr;
  int64_t first = 0;

  explicit operator bool() const { return buffer != nullptr; }
  template <class I>
  requires std::is_integral_v<I> DeviceArray operator+(I n) const {
    return {buffer, first + static_cast<int64_t>(n)};
  }
  operator DeviceArray<const U>() const  // NOLINT(google-explicit-constructor): as T* to const T*
      requires(!std::is_const_v<U>) {
    return {buffer, first};
  }
  // count values as a View: whole 32-bit words, within the buffer.
  vk::View view(int64_t count) const {
    check(buffer != nullptr, "vulkan backend: an op was given an empty array");
    const size_t at = static_cast<size_t>(first) * sizeof(U);
    const size_t bytes = (static_cast<size_t>(count) * sizeof(U) + 3) / 4 * 4;
    return vk::View(*buffer, at, std::min(bytes, buffer->bytes() - std::min(at, buffer->bytes())));
  }
  // As a product's operand: row stride ld, in f32.
  vk::Operand operand(int64_t ld) const { return {buffer, ld, first, DType::f32}; }
};

// Scratch an Array lives in: a device buffer grown on demand (Vulkan::sized), and how many
// times it was made (what was recorded with an earlier one must not run).
template <class U>
struct DeviceVector {
  std::unique_ptr<vk::Buffer> buffer;
  uint64_t generation = 0;
};

// One device buffer, handed out by a Planner.
struct DeviceArena {
  std::unique_ptr<vk::Buffer> buffer;
  size_t used = 0;
  size_t capacity() const { return buffer ? buffer->bytes() : 0; }
};

struct Vulkan {
  template <class U>
  using Array = DeviceArray<U>;
  template <class U>
  using Vector = DeviceVector<U>;
  using Arena = DeviceArena;
  // Parameters start on multiples of 128 elements: 512 bytes for f32, 256 for a 16-bit copy,
  // which every device's storage-buffer offset alignment divides.
  static constexpr size_t kParamAlign = 128;
  static constexpr bool kBf16Operands = false;

  vk::Context* context = nullptr;
  // Counts bytes on the first pass (blocks of whole vk::kViewAlignment), hands out the arena's
  // buffer on the second.
  struct Planner {
    Arena* arena = nullptr;
    size_t bytes = 0, largest = 0;
    template <class U>
    Array<U> alloc(size_t n) {
      if (n == 0) return {};
      const size_t block =
          (n * sizeof(U) + vk::kViewAlignment - 1) / vk::kViewAlignment * vk::kViewAlignment;
      if (!arena) {
        bytes += block;
        largest = std::max(largest, block);
        return {};
      }
      check(arena->used + block <= arena->capacity(), "vulkan backend: the plan outgrew its arena");
      const Array<U> a{arena->buffer.get(), static_cast<int64_t>(arena->used / sizeof(U))};
      arena->used += block;
      return a;
    }
  };
  Arena make_arena(size_t bytes) const {
    Arena a;
    a.buffer = std::make_unique<vk::Buffer>(*context, std::max<size_t>(bytes, 4));
    return a;
  }
  // v holding at least n values (a larger buffer when it holds fewer: contents not kept).
  template <class U>
  Array<U> sized(Vector<U>& v, size_t n) const {
    const size_t bytes = std::max<size_t>((n * sizeof(U) + 3) / 4 * 4, 4);
    if (!v.buffer || v.buffer->bytes() < bytes) {
      v.buffer.reset();  // the old one released first: peak memory is the larger only
      v.buffer = std::make_unique<vk::Buffer>(*context, bytes);
      ++v.generation;
    }
    return {v.buffer.get(), 0};
  }

  // ---- the ops, with the CPU kernels' arguments (backend/cpu.h)

  void embedding_forward(Array<float> x, Array<const int32_t> tokens, Array<const float> table,
                         int64_t vocab, Array<const float> positions, int64_t rows, int64_t C,
                         int64_t first, int64_t period) const {
    std::optional<vk::View> pos;
    if (positions) pos = positions.view((first + std::min(rows, period)) * C);
    vk::embedding_forward(*context, x.view(rows * C), tokens.view(rows), table.view(vocab * C),
                          DType::f32, pos, rows, C, vocab, first, period);
  }
  void embedding_backward(Array<float> dtable, int64_t vocab, Array<float> dpositions,
                          Array<const float> dx, Array<const int32_t> tokens, int64_t rows,
                          int64_t C, int64_t period) const {
    std::optional<vk::View> dpos;
    if (dpositions) dpos = dpositions.view(std::min(rows, period) * C);
    vk::embedding_backward(*context, dtable.view(vocab * C), dpos, dx.view(rows * C),
                           tokens.view(rows), rows, C, vocab, period);
  }
  void dropout_forward(Array<float> y, Array<uint8_t> mask, Array<const float> x, int64_t n,
                       float rate, kernels::DropoutSite where) const {
    vk::dropout_forward(*context, y.view(n), mask.view(n), x.view(n), n, rate, where);
  }
  void dropout_backward(Array<float> dx, Array<const float> dy, Array<const uint8_t> mask,
                        int64_t n, float rate) const {
    vk::dropout_backward(*context, dx.view(n), dy.view(n), mask.view(n), n, rate);
  }
  void layernorm_forward(Array<float> y, Array<float> mean, Array<float> rstd, Array<const float> x,
                         Array<const float> w, Array<const float> b, int64_t rows, int64_t C,
                         float eps) const {
    vk::layernorm_forward(*context, y.view(rows * C), mean.view(rows), rstd.view(rows),
                          x.view(rows * C), w.view(C), b.view(C), rows, C, eps);
  }
  void layernorm_backward(Array<float> dx, Array<float> dw, Array<float> db, Array<const float> dy,
                          Array<const float> x, Array<const float> w, Array<const float> mean,
                          Array<const float> rstd, int64_t rows, int64_t C) const {
    vk::layernorm_backward(*context, dx.view(rows * C), dw.view(C), db.view(C), dy.view(rows * C),
                           x.view(rows * C), w.view(C), mean.view(rows), rstd.view(rows), rows, C);
  }
  void gelu_forward(Array<float> y, Array<const float> x, int64_t n) const {
    vk::gelu_forward(*context, y.view(n), x.view(n), n);
  }
  void gelu_backward(Array<float> dx, Array<const float> dy, Array<const float> x,
                     int64_t n) const {
    vk::gelu_backward(*context, dx.view(n), dy.view(n), x.view(n), n);
  }
  int64_t causal_attention_scratch_size(int64_t B, int64_t T, int64_t, int64_t H) const {
    return vk::causal_attention_scratch_size(B, T, H);
  }
  void causal_attention_forward(Array<float> out, Array<float> att, Array<const float> qkv,
                                Array<float>, int64_t B, int64_t T, int64_t C, int64_t H,
                                float dropout, kernels::DropoutSite where) const {
    vk::causal_attention_forward(*context, out.view(B * T * C), att.view(B * H * T * T),
                                 qkv.view(B * T * 3 * C), B, T, C, H, dropout, where);
  }
  void causal_attention_backward(Array<float> dqkv, Array<const float> dout, Array<const float> att,
                                 Array<const float> qkv, Array<float> scratch, int64_t B, int64_t T,
                                 int64_t C, int64_t H, float dropout) const {
    vk::causal_attention_backward(*context, dqkv.view(B * T * 3 * C), dout.view(B * T * C),
                                  att.view(B * H * T * T), qkv.view(B * T * 3 * C),
                                  scratch.view(vk::causal_attention_scratch_size(B, T, H)), B, T, C,
                                  H, dropout);
  }
  // The total in double, as the CPU kernel returns it (a download: the recorded work runs).
  double cross_entropy_forward(Array<float> losses, Array<float> lse, Array<const float> logits,
                               Array<const int32_t> targets, int64_t rows, int64_t V) const {
    vk::cross_entropy_forward(*context, losses.view(rows), lse.view(rows), logits.view(rows * V),
                              targets.view(rows), rows, V);
    return vk::sum_losses(losses.view(rows), rows);
  }
  void cross_entropy_backward(Array<float> dlogits, Array<const float> logits,
                              Array<const float> lse, Array<const int32_t> targets, int64_t rows,
                              int64_t V, float scale) const {
    vk::cross_entropy_backward(*context, dlogits.view(rows * V), logits.view(rows * V),
                               lse.view(rows), targets.view(rows), rows, V, scale);
  }
  void gemm(kernels::Trans ta, kernels::Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
            Array<const float> A, int64_t lda, Array<const float> B, int64_t ldb, float beta,
            Array<float> C, int64_t ldc) const {
    vk::gemm(*context, ta, tb, M, N, K, alpha, A.operand(lda), B.operand(ldb), beta, *C.buffer, ldc,
             C.first);
  }
  void add_bias(Array<float> y, Array<const float> b, int64_t rows, int64_t n) const {
    vk::add_bias(*context, y.view(rows * n), b.operand(0), rows, n);
  }
  // db += the column sums of dy, rows in order (the CPU kernel's bits).
  void bias_backward(Array<float> db, Array<const float> dy, int64_t rows, int64_t n) const {
    vk::bias_backward(*context, *db.buffer, dy.view(rows * n), rows, n, db.first);
  }
  void round_to_bf16(Array<float> dst, Array<const float> src, int64_t n) const {
    vk::round_to_half(*context, dst.view(n), src.view(n), n, vk::Half::bf16);
  }
  void round_to_f16(Array<float> dst, Array<const float> src, int64_t n) const {
    vk::round_to_half(*context, dst.view(n), src.view(n), n, vk::Half::f16);
  }
  void add(Array<float> y, Array<const float> a, Array<const float> b, int64_t rows,
           int64_t n) const {
    vk::add(*context, y.view(rows * n), a.view(rows * n), b.view(rows * n), rows * n);
  }
  void zero(Array<float> p, int64_t n) const { vk::fill(*context, p.view(n), 0.0f, n); }
  void copy(Array<float> dst, Array<const float> src, int64_t n) const {
    vk::copy(*context, *dst.buffer, dst.first, *src.buffer, src.first, n);
  }
  template <class U>
  void copy_in(Array<U> dst, std::span<const U> src) const {
    dst.buffer->upload(std::as_bytes(src), static_cast<size_t>(dst.first) * sizeof(U));
  }
};

}  // namespace tinylm::backend
