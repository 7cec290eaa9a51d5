#pragma once
// GPT-2 inference with a KV cache. Weight matrices, the token embedding and the KV cache are
// stored in the chosen dtype (f32, bf16 or f16); LayerNorm parameters, biases and every
// accumulation stay f32. A prompt runs as one batched forward (matrix products); each new
// token then runs alone against the cache.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/models/gpt2/config.h"

namespace tinylm::gpt2 {

// Keys and values of every layer for up to `capacity` positions.
struct KvCache {
  int capacity = 0;
  int length = 0;  // positions filled
  // In the model's dtype: keys (n_layer, C, capacity rounded up to 16), transposed per head;
  // values (n_layer, capacity, C).
  std::vector<std::byte> keys, values;
};

class Model {
 public:
  // params: f32, flat, in param_layout(config) order; an f32 model keeps this very buffer
  // (move it in to avoid a copy), a bf16/f16 model converts it and lets it go. lm_head: an
  // untied output head [vocab, C], or empty when the head is wte (GPT-2's tying).
  Model(const Config& config, std::vector<float> params, DType dtype,
        std::vector<float> lm_head = {});
  // An f32 model that uses the weights where `tensor(name)` points (every name of
  // param_layout; contiguous f32, 4-byte aligned), e.g. inside a memory-mapped safetensors
  // file kept alive by `owner`: nothing is copied. lm_head: an untied head, or null.
  static Model from_f32_views(const Config& config,
                              const std::function<const float*(const std::string&)>& tensor,
                              std::shared_ptr<const void> owner, const float* lm_head = nullptr);
  // Reads tensor `name` (any name of param_layout, or "lm_head.weight" when untied_head) as
  // `numel` values of `dtype` into `out`.
  using TensorReader =
      std::function<void(const std::string& name, DType dtype, void* out, size_t numel)>;
  // A model that owns its weights in `dtype`, each tensor read straight into place: loading
  // needs no f32 copy of the whole model.
  static Model from_reader(const Config& config, DType dtype, const TensorReader& read,
                           bool untied_head);
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const Config& config() const;
  DType dtype() const;
  size_t weight_bytes() const;  // bytes of all weights as stored

  KvCache new_cache(int capacity) const;  // capacity <= n_positions

  // Runs `tokens` at positions cache.length, cache.length + 1, ... (which must stay below
  // cache.capacity), appending their keys and values. logits receives (tokens.size(), vocab)
  // values when all_logits, else the last position's (vocab).
  void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
               bool all_logits = false);
  // One token for each of several sequences: tokens[r] runs at position caches[r]->length of
  // cache r (distinct caches, each with room for one more position), and logits receives
  // (tokens.size(), vocab) values. The weights are read once for all rows, and each row's
  // logits are the same bits as forward() of that token alone against its cache (continuous
  // batching in the server relies on it).
  void forward_batch(std::span<const int> tokens, std::span<KvCache* const> caches,
                     std::span<float> logits);
  // The same, with the logits of positions first_row .. tokens.size() - 1 only
  // ((tokens.size() - first_row, vocab) values): perplexity scores only part of a window. An
  // f32 model's head of many rows runs as a library GEMM (kernels/matmul/gemm.h: tolerance
  // contract, the same bytes for the same inputs and threads), so these logits match
  // forward's within rounding, not bit for bit.
  void forward_rows(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                    int64_t first_row);

  struct Impl;

 private:
  Model() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinylm::gpt2
