#pragma once
// GPT-2 inference with a KV cache. Weight matrices, the token embedding and the KV cache are
// stored in the chosen dtype (f32, bf16 or f16); LayerNorm parameters, biases and every
// accumulation stay f32. A prompt runs as one batched forward (matrix products); each new
// token then runs alone against the cache.
//
// Quantized models (q8_0, q4_0: ggml's blocks, kernels/quant/blocks.h) keep their matrices in
// ggml's layout, which is GGUF's bytes: a Hugging Face Conv1D weight (nin, nout) is stored
// transposed, nout rows of nin / 32 blocks (blocks run along the input dimension); wte
// (vocab, C) is vocab rows of C / 32 blocks. n_embd and the MLP width must be multiples of 32
// (else Error). What stays higher precision, and why:
//  - LayerNorm weights and biases, all biases: f32, as llama.cpp's converter keeps every 1-D
//    tensor; they are 0.1% of the weights and feed every row unscaled.
//  - wpe (the position embedding): f32, as llama.cpp keeps position_embd; read one row per
//    token, so its bytes hardly count per token, and it is added to every activation.
//  - the KV cache: f32 (computed activations, not weights; at GPT-2's lengths its bytes per
//    token are small next to the weights').
//  - wte, which is also the tied output head: in the model's type for q8_0 (as llama.cpp's
//    convert_hf_to_gguf --outtype q8_0 writes it); q8_0 in a q4_0 model, see
//    quant_embedding_dtype. llama.cpp's quantizer likewise gives a tied token_embd a wider type
//    (Q6_K) in a Q4_0 file: every logit goes through it, and 4-bit head errors move the
//    softmax of every token. A file's wte (or head) may be of any block type, q6_k included,
//    or f32, and is used in place.
// A model read in place from a GGUF file may also have k-quant matrices, of mixed types
// (llama.cpp's Q6_K, Q4_K_M and Q5_K_M files); tinylm has no quantizer for the k-quants, so only
// files give them. By default activations are not quantized: each product is an f32
// computation over the dequantized weights (kernels/quant/matmul.h), so decode equals prefill
// bit for bit here too (set_activations offers ggml's 8-bit activations).
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/models/gpt2/config.h"

namespace tinylm::kernels::vulkan {
class Context;
}

namespace tinylm::gpt2 {

// The type wte (and a tied head) gets when a model of `dtype` is quantized from floats: q8_0
// for q8_0 and q4_0 models (model.h's header says why), else dtype.
DType quant_embedding_dtype(DType dtype);

// A cache's place on a GPU (model_vulkan.cpp): a slot of the device's cache pool, free again when
// the last KvCache holding it goes.
struct DeviceSlot;

// Keys and values of every layer for up to `capacity` positions.
struct KvCache {
  int capacity = 0;
  int length = 0;            // positions filled
  DType dtype = DType::f32;  // the model's cache type when it made this cache
  // In that type, per layer kv_positions(capacity) * C keys and as many values, laid out in
  // blocks of 16 positions as kernels/attention/causal.h's kv_key_index and kv_value_index
  // place them.
  std::vector<std::byte> keys, values;
  // On a GPU (Model::to_gpu) instead: keys and values live in the slot, and the vectors are empty.
  std::shared_ptr<DeviceSlot> device;
};

class Model {
 public:
  // params: f32, flat, in param_layout(config) order; an f32 model keeps this very buffer
  // (move it in to avoid a copy), a bf16/f16 model converts it and lets it go, a q8_0/q4_0
  // model quantizes it. lm_head: an
  // untied output head [vocab, C], or empty when the head is wte (GPT-2's tying).
  Model(const Config& config, std::vector<float> params, DType dtype,
        std::vector<float> lm_head = {});
  // An f32 model that uses the weights where `tensor(name)` points (every name of
  // param_layout; contiguous f32, 4-byte aligned), e.g. inside a memory-mapped safetensors
  // file kept alive by `owner`: nothing is copied. lm_head: an untied head, or null.
  static Model from_f32_views(const Config& config,
                              const std::function<const float*(const std::string&)>& tensor,
                              std::shared_ptr<const void> owner, const float* lm_head = nullptr);
  // Reads elements [first, first + numel) of tensor `name` (any name of param_layout, or
  // "lm_head.weight" when untied_head) as `numel` values of `dtype` into `out`.
  using TensorReader = std::function<void(const std::string& name, DType dtype, void* out,
                                          size_t numel, size_t first)>;
  // A model that owns its weights in `dtype`, each tensor read straight into place: loading
  // needs no f32 copy of the whole model.
  // For q8_0 and q4_0, every tensor is read as f32 in Hugging Face's layout and quantized at
  // load (Conv1D weights transposed into ggml's layout first).
  static Model from_reader(const Config& config, DType dtype, const TensorReader& read,
                           bool untied_head);
  // A tensor in memory: its type, its first byte, and how many bytes the caller has there
  // (checked against the tensor's shape: storage_bytes(dtype, numel)).
  struct TensorView {
    DType dtype = DType::f32;
    const void* data = nullptr;
    size_t bytes = 0;
  };
  // A quantized model (dtype q8_0 or q4_0) over tensors used in place, e.g. inside a
  // memory-mapped GGUF file kept alive by `owner`: nothing is copied. tensor(name) is called
  // for every name of param_layout, with Hugging Face's names (and "lm_head.weight" when
  // untied_head); each view must be:
  //  - the layers' four matrices: blocks of any block type in ggml's layout (the header above;
  //    `dtype`, the model's reported type, is the file's, and its blocks must divide the
  //    widths), each matrix's blocks dividing its inputs;
  //  - wte.weight and lm_head.weight: blocks of any block type, vocab rows of n_embd, or f32;
  //  - every other tensor (1-D, wpe): f32, 4-byte aligned.
  // Blocks need no alignment. Throws Error naming the tensor for a null pointer, a wrong type, a
  // byte count that does not match the shape, or widths that are not whole blocks.
  // writable(data, bytes), when given, makes a view's bytes writable by this model alone (a
  // private mapping): 8-bit activations then repack the q8_0/q4_0 matrices in place rather than
  // beside the file's bytes (set_activations).
  using MakeWritable = std::function<std::byte*(const void* data, size_t bytes)>;
  static Model from_quant_views(const Config& config, DType dtype,
                                const std::function<TensorView(const std::string&)>& tensor,
                                std::shared_ptr<const void> owner, bool untied_head = false,
                                MakeWritable writable = {});
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  const Config& config() const;
  DType dtype() const;
  size_t weight_bytes() const;  // bytes of all weights as stored

  // This model on a GPU (kernels/vulkan, a Context from open_gpu): the weights uploaded once in
  // `dtype` (f32, f16 or bf16) from this model, which must be f32 and may go afterwards; KV caches
  // (new_cache) on the device too, f16 for an f16 model and f32 otherwise. Every call below runs
  // there, with f32 activations and accumulation (docs/gpu.md). Error: a build without Vulkan,
  // another dtype, or the device out of memory.
  // `sequences`: caches reserved at once (more are made as needed, doubling the pool).
  Model to_gpu(std::shared_ptr<kernels::vulkan::Context> gpu, DType dtype, int sequences = 1) const;
  // What a model of `config` in `dtype` takes on a GPU with `sequences` caches of n_positions
  // positions and forwards of up to n_positions tokens returning up to `logit_rows` rows of
  // logits (generate: 1; perplexity: its window): bytes in all, and the largest buffer a shader
  // binds, for a fit check before anything is uploaded.
  struct GpuNeeds {
    uint64_t bytes = 0, largest_binding = 0;
  };
  static GpuNeeds gpu_needs(const Config& config, DType dtype, int sequences = 1,
                            int logit_rows = 1);
  // The GPU's name, or empty on the CPU.
  std::string device_name() const;

  // The activations' type in a q8_0 / q4_0 model's products: f32 (the default; an f32 product
  // over the dequantized weights, kernels/quant/matmul.h) or q8_0 (each row quantized to 8 bits
  // per block of 32, as ggml computes: kernels/quant/int_matmul.h). K-quant and f32 matrices keep
  // f32 activations. In a bf16 model: f32 or bf16 (each row entering a product, the head
  // included, rounded to bf16, and pairs of products summed by AVX512_BF16's VDPBF16PS:
  // kernels/matmul/bf16_dot.h; Error where the CPU lacks it or the level is not avx512).
  // Error for other types and models.
  void set_activations(DType t);
  DType activations() const;

  // The KV cache's element type: by default the weights' for bf16 and f16 models, f32 for f32
  // and quantized ones. On the CPU any of f32, bf16 or f16 (keys and values rounded to it as they
  // are stored, as llama.cpp's --cache-type-k/v do): a 16-bit cache holds half the bytes, which
  // batched decoding reads every step. Caches made before a change are refused by forward.
  // Error for other types, and on a GPU for anything but its own.
  void set_cache_type(DType t);
  DType cache_type() const;

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
  // Several sequences' tokens in one pass: the first lengths[0] of `tokens` run into caches[0]
  // at its next positions, the next lengths[1] into caches[1], and so on (distinct caches,
  // each length >= 1 and within its cache's room). logits receives (caches.size(), vocab): each
  // sequence's last position, the same bits as forward() of its tokens alone (a server
  // prefills the prompts it admits together this way).
  void forward_sequences(std::span<const int> tokens, std::span<const int> lengths,
                         std::span<KvCache* const> caches, std::span<float> logits);
  // The same, with the logits of positions first_row .. tokens.size() - 1 only
  // ((tokens.size() - first_row, vocab) values): perplexity scores only part of a window. Each
  // row's logits are the bits forward() gives it, at every kernel level.
  void forward_rows(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                    int64_t first_row);

  struct Impl;

 private:
  Model() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinylm::gpt2
