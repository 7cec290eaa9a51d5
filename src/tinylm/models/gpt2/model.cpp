#include "tinylm/models/gpt2/model.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/models/gpt2/host_forward.h"
#include "tinylm/models/gpt2/model_impl.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::gpt2 {

namespace k = tinylm::kernels;

namespace {

void convert_floats(const float* src, size_t n, DType to, void* out) {
  const int64_t count = static_cast<int64_t>(n);
  switch (to) {
    case DType::f32:
      std::memcpy(out, src, n * sizeof(float));
      break;
    case DType::bf16:
      k::convert(src, static_cast<k::Bf16*>(out), count);
      break;
    case DType::f16:
      k::convert(src, static_cast<k::F16*>(out), count);
      break;
    default:
      fail("gpt2: cannot store weights as ", dtype_name(to));
  }
}

// The model for one storage type W (float, Bf16 or F16) of its weights (the KV cache's is
// cache_dtype: W's by default, HostForward).
template <class W>
struct TypedImpl final : HostForward<TypedImpl<W>> {
  using Model::Impl::config;
  // Storage: the matrices (and wte) in W, on cache-line boundaries; LayerNorm parameters,
  // biases and wpe in f32. An f32 model built from a flat parameter vector keeps that vector
  // (no copy) in `flat` instead.
  AlignedVector<W> matrices;
  std::vector<float> small;
  AlignedVector<W> lm_head_storage;
  std::vector<float> flat, flat_head;
  Tensors<const float*, const W*> weights;
  const W* lm_head = nullptr;  // weights.wte when tied
  // The layers' Conv1D matrices: tiled in owned half-precision models (faster decode), as
  // in the file otherwise (f32 gains nothing from tiles and is often used in place).
  k::Layout conv_layout = k::Layout::rows;
  size_t bytes = 0;

  // Weights used in place (W = float only): pointers into memory that `owner` keeps alive.
  std::shared_ptr<const void> owner;
  TypedImpl(const Config& c, const std::function<const float*(const std::string&)>& tensor,
            std::shared_ptr<const void> keep_alive, const float* head) {
    static_assert(std::is_same_v<W, float>);
    config = c;
    owner = std::move(keep_alive);
    bytes = param_layout(c).size() * sizeof(float);
    bind_tensors(*this, tensor, tensor);
    lm_head = head ? head : weights.wte;
    if (head) bytes += static_cast<size_t>(c.vocab_size) * c.n_embd * sizeof(float);
  }

  // Weights owned by the model: the matrices (and wte) in W, the small tensors in f32, each
  // read straight into its place by `read` (no f32 copy of the whole model in between).
  TypedImpl(const Config& c, const Model::TensorReader& read, bool untied_head) {
    config = c;
    const DType wd = storage_dtype();
    size_t n_matrix = 0, n_small = 0;
    for_each_tensor(c, weights, [&](const TensorSpec& t, auto&, auto matrix) {
      (matrix ? n_matrix : n_small) += static_cast<size_t>(shape_numel(t.shape));
    });
    matrices.resize(n_matrix);
    small.resize(n_small);
    if (!std::is_same_v<W, float> && k::can_tile(c.n_embd, c.mlp_dim()))
      conv_layout = k::Layout::tiles;
    AlignedVector<W> unpacked;  // one Conv1D matrix as read, before tiling
    n_matrix = n_small = 0;
    for_each_tensor(c, weights, [&](const TensorSpec& t, auto& field, auto matrix) {
      const auto numel = static_cast<size_t>(shape_numel(t.shape));
      if constexpr (matrix) {
        W* dst = matrices.data() + n_matrix;
        if (conv_layout == k::Layout::tiles && t.conv1d) {
          unpacked.resize(numel);
          read(t.name, wd, unpacked.data(), numel, 0);
          k::pack_tiles(dst, unpacked.data(), t.shape[0], t.shape[1]);
        } else {
          read(t.name, wd, dst, numel, 0);
        }
        field = dst;
        n_matrix += numel;
      } else {
        field = small.data() + n_small;
        read(t.name, DType::f32, small.data() + n_small, numel, 0);
        n_small += numel;
      }
    });
    lm_head = weights.wte;
    bytes = matrices.size() * sizeof(W) + small.size() * sizeof(float);
    if (untied_head) {
      lm_head_storage.resize(static_cast<size_t>(c.vocab_size) * c.n_embd);
      read("lm_head.weight", wd, lm_head_storage.data(), lm_head_storage.size(), 0);
      bytes += lm_head_storage.size() * sizeof(W);
      lm_head = lm_head_storage.data();
    }
  }

  // An f32 model over a flat parameter vector it takes over (no copy).
  TypedImpl(const Config& c, std::vector<float> params, std::vector<float> head) {
    static_assert(std::is_same_v<W, float>);
    config = c;
    const ParamLayout L = param_layout(c);
    flat = std::move(params);
    bytes = flat.size() * sizeof(float);
    const auto at = [&](const std::string& n) { return flat.data() + L.at(n).offset; };
    bind_tensors(*this, at, at);
    if (!head.empty()) {
      flat_head = std::move(head);
      bytes += flat_head.size() * sizeof(float);
      lm_head = flat_head.data();
    }
  }

  static DType storage_dtype() {
    if constexpr (std::is_same_v<W, k::Bf16>) return DType::bf16;
    if constexpr (std::is_same_v<W, k::F16>) return DType::f16;
    return DType::f32;
  }

  size_t weight_bytes() const override { return bytes; }

  const float* f32_tensor(const std::string& name) const override {
    if constexpr (std::is_same_v<W, float>) {
      if (name == "lm_head.weight") return lm_head == weights.wte ? nullptr : lm_head;
      const float* found = nullptr;
      // for_each_tensor takes the fields to bind; here they are only read.
      auto& w = const_cast<Tensors<const float*, const W*>&>(weights);
      for_each_tensor(config, w, [&](const TensorSpec& t, auto& field, auto) {
        if (t.name == name) found = field;
      });
      check(found != nullptr, "gpt2: no tensor ", name);
      return found;
    }
    return Model::Impl::f32_tensor(name);
  }

  // bf16 activations (bf16 models only, Model::set_activations checks): the Conv1D matrices
  // turn, in place, from tiles to kernels/matmul/bf16_dot.h's pairs, and back for f32.
  void set_activations(DType t) override {
    if constexpr (std::is_same_v<W, k::Bf16>) {
      if (t == this->activations) return;
      const bool to_pairs = t == DType::bf16;
      if (to_pairs) {
        k::require_bf16_dot("gpt2: bf16 activations");
        check(conv_layout == k::Layout::tiles && config.n_embd % 32 == 0,
              "gpt2: bf16 activations need n_embd a multiple of 32 and the MLP width one of 16 "
              "(they are ",
              config.n_embd, " and ", config.mlp_dim(), ")");
      }
      // The model's own matrices (conv_layout is tiles).
      for_each_tensor(config, weights, [&](const TensorSpec& s, auto& field, auto matrix) {
        if constexpr (matrix) {
          if (!s.conv1d) return;
          W* m = const_cast<W*>(field);
          const int64_t nin = s.shape[0], nout = s.shape[1];
          to_pairs ? k::tiles_to_pairs(m, nin, nout) : k::pairs_to_tiles(m, nin, nout);
        }
      });
    }
    this->activations = t;
  }

  // ForwardPass's storage calls.
  void embed(float* out, const int32_t* token_ids, int64_t rows, int64_t first_position) const {
    k::embedding_forward(out, token_ids, weights.wte, weights.wpe, rows, config.n_embd,
                         first_position);
  }
  void matmul(float* y, const float* in, const W* w, const float* b, int64_t rows, int64_t nin,
              int64_t nout) const {
    if constexpr (std::is_same_v<W, k::Bf16>) {
      if (this->activations == DType::bf16)
        return k::matmul_in_out_bf16(y, in, w, b, rows, nin, nout);
    }
    k::matmul_in_out(y, in, w, b, rows, nin, nout, conv_layout);
  }
  void head(std::span<float> logits, const float* normed, int64_t rows) const {
    const int64_t C = config.n_embd, V = config.vocab_size;
    if constexpr (std::is_same_v<W, k::Bf16>) {
      if (this->activations == DType::bf16)
        return k::matmul_out_in_bf16(logits.data(), normed, lm_head, rows, C, V);
    }
    k::matmul_out_in(logits.data(), normed, lm_head, rows, C, V);
  }
};

}  // namespace

Model::Model(const Config& config, std::vector<float> params, DType dtype,
             std::vector<float> lm_head) {
  config.validate();
  check(params.size() == param_layout(config).size(), "gpt2: ", params.size(),
        " parameters given, the configuration has ", param_layout(config).size());
  check(lm_head.empty() || lm_head.size() == static_cast<size_t>(config.vocab_size) * config.n_embd,
        "gpt2: lm_head has ", lm_head.size(), " values, expected vocab_size * n_embd");
  if (dtype == DType::f32) {
    impl_ = std::make_unique<TypedImpl<float>>(config, std::move(params), std::move(lm_head));
    impl_->dtype = impl_->cache_dtype = dtype;
    return;
  }
  const ParamLayout L = param_layout(config);
  const TensorReader read = [&](const std::string& name, DType to, void* out, size_t numel,
                                size_t first) {
    const float* src =
        (name == "lm_head.weight" ? lm_head.data() : params.data() + L.at(name).offset) + first;
    convert_floats(src, numel, to, out);
  };
  *this = from_reader(config, dtype, read, !lm_head.empty());
}

Model Model::from_reader(const Config& config, DType dtype, const TensorReader& read,
                         bool untied_head) {
  config.validate();
  Model m;
  switch (dtype) {
    case DType::f32:
      m.impl_ = std::make_unique<TypedImpl<float>>(config, read, untied_head);
      break;
    case DType::bf16:
      m.impl_ = std::make_unique<TypedImpl<k::Bf16>>(config, read, untied_head);
      break;
    case DType::f16:
      m.impl_ = std::make_unique<TypedImpl<k::F16>>(config, read, untied_head);
      break;
    case DType::q8_0:
    case DType::q4_0:
      m.impl_ = quant_impl_from_reader(config, dtype, read, untied_head);
      return m;
    default:
      fail("gpt2: unsupported dtype ", dtype_name(dtype),
           " (expected f32, bf16, f16, q8_0 or q4_0)");
  }
  m.impl_->dtype = m.impl_->cache_dtype = dtype;
  return m;
}

Model Model::from_f32_views(const Config& config,
                            const std::function<const float*(const std::string&)>& tensor,
                            std::shared_ptr<const void> owner, const float* lm_head) {
  config.validate();
  Model m;
  m.impl_ = std::make_unique<TypedImpl<float>>(config, tensor, std::move(owner), lm_head);
  m.impl_->dtype = m.impl_->cache_dtype = DType::f32;
  return m;
}

Model Model::from_quant_views(const Config& config, DType dtype,
                              const std::function<TensorView(const std::string&)>& tensor,
                              std::shared_ptr<const void> owner, bool untied_head,
                              MakeWritable writable) {
  config.validate();
  Model m;
  m.impl_ = quant_impl_from_views(config, dtype, tensor, std::move(owner), untied_head,
                                  std::move(writable));
  return m;
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const Config& Model::config() const { return impl_->config; }
DType Model::dtype() const { return impl_->dtype; }
size_t Model::weight_bytes() const { return impl_->weight_bytes(); }

void Model::set_activations(DType t) {
  check(t == DType::f32 || t == DType::q8_0 || t == DType::bf16, "gpt2: activations ",
        dtype_name(t), ": f32, q8_0 or bf16 only");
  check(t != DType::q8_0 || impl_->dtype == DType::q8_0 || impl_->dtype == DType::q4_0,
        "gpt2: q8_0 activations need a q8_0 or q4_0 model, this one is ", dtype_name(impl_->dtype));
  check(t != DType::bf16 || impl_->dtype == DType::bf16,
        "gpt2: bf16 activations need a bf16 model, this one is ", dtype_name(impl_->dtype));
  impl_->set_activations(t);
}
DType Model::activations() const { return impl_->activations; }

void Model::set_cache_type(DType t) {
  check(t == DType::f32 || t == DType::bf16 || t == DType::f16, "gpt2: a KV cache of ",
        dtype_name(t), ": f32, bf16 or f16 only");
  check(impl_->device_name().empty() || t == impl_->cache_dtype, "gpt2: on a GPU the KV cache is ",
        dtype_name(impl_->cache_dtype), " (the weights' type); another cache type runs on the CPU");
  impl_->cache_dtype = t;
}
DType Model::cache_type() const { return impl_->cache_dtype; }

KvCache Model::new_cache(int capacity) const {
  const Config& c = impl_->config;
  check(capacity >= 1 && capacity <= c.n_positions, "gpt2: cache capacity ", capacity,
        " outside 1..n_positions (", c.n_positions, ")");
  return impl_->new_cache(capacity);
}

KvCache Model::Impl::new_cache(int capacity) const {
  KvCache cache;
  cache.capacity = capacity;
  // Keys and values in blocks of 16 positions (kernels/attention/causal.h).
  const size_t per_layer = static_cast<size_t>(config.n_embd) * dtype_size(cache_dtype) *
                           static_cast<size_t>(kernels::kv_positions(capacity));
  cache.dtype = cache_dtype;
  cache.keys.resize(config.n_layer * per_layer);
  cache.values.resize(config.n_layer * per_layer);
  return cache;
}

const float* Model::Impl::f32_tensor(const std::string&) const {
  fail("gpt2: only an f32 model's weights can go to a GPU (this one is ", dtype_name(dtype), ")");
}

Model Model::to_gpu(std::shared_ptr<kernels::vulkan::Context> gpu, DType dtype,
                    int sequences) const {
  check(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16, "gpt2: on a GPU, ",
        dtype_name(dtype), " weights are not supported (f32, f16 or bf16)");
  Model m;
  check(sequences >= 1, "gpt2: ", sequences, " sequences reserved on a GPU");
  m.impl_ = gpu_impl(std::move(gpu), *impl_, dtype, sequences);
  return m;
}

Model::GpuNeeds Model::gpu_needs(const Config& config, DType dtype, int sequences, int logit_rows) {
  return gpt2::gpu_needs(config, dtype, sequences, logit_rows);
}

std::string Model::device_name() const { return impl_->device_name(); }

void Model::forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                    bool all_logits) {
  impl_->forward(tokens, cache, logits, all_logits ? 0 : static_cast<int64_t>(tokens.size()) - 1);
}

void Model::forward_batch(std::span<const int> tokens, std::span<KvCache* const> caches,
                          std::span<float> logits) {
  const std::vector<int> ones(tokens.size(), 1);
  impl_->forward_sequences(tokens, ones, caches, logits);
}

void Model::forward_sequences(std::span<const int> tokens, std::span<const int> lengths,
                              std::span<KvCache* const> caches, std::span<float> logits) {
  impl_->forward_sequences(tokens, lengths, caches, logits);
}

void Model::forward_rows(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                         int64_t first_row) {
  impl_->forward(tokens, cache, logits, first_row);
}

}  // namespace tinylm::gpt2
