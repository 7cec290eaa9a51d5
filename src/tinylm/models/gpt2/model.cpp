#include "tinylm/models/gpt2/model.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"
#include "tinylm/kernels/activation/gelu.h"
#include "tinylm/kernels/attention/causal.h"
#include "tinylm/kernels/cast/cast.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/matmul/gemm.h"
#include "tinylm/kernels/matmul/stream.h"
#include "tinylm/kernels/norm/layernorm.h"
#include "tinylm/models/gpt2/model_impl.h"

namespace tinylm::gpt2 {

namespace k = tinylm::kernels;

// From this many rows on, forward_rows's f32 head is a GEMM.
constexpr int64_t kGemmHeadRows = 32;

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

// The model for one storage type W (float, Bf16 or F16) of weights and KV cache.
template <class W>
struct TypedImpl final : Model::Impl {
  struct Layer {
    const float *ln1_w, *ln1_b, *attn_b, *proj_b, *ln2_w, *ln2_b, *fc_b, *fc_proj_b;
    const W *attn_w, *proj_w, *fc_w, *fc_proj_w;
  };
  // Storage: the matrices (and wte) in W, on cache-line boundaries; LayerNorm parameters,
  // biases and wpe in f32. An f32 model built from a flat parameter vector keeps that vector
  // (no copy) in `flat` instead.
  AlignedVector<W> matrices;
  std::vector<float> small;
  AlignedVector<W> lm_head_storage;
  std::vector<float> flat, flat_head;
  const W* wte = nullptr;
  const W* lm_head = nullptr;  // wte when tied
  const float *wpe = nullptr, *lnf_w = nullptr, *lnf_b = nullptr;
  std::vector<Layer> layers;
  // The layers' Conv1D matrices: tiled in owned half-precision models (faster decode), as
  // in the file otherwise (f32 gains nothing from tiles and is often used in place).
  k::Layout conv_layout = k::Layout::rows;
  size_t bytes = 0;
  // Scratch for one forward of up to `rows` positions, grown on demand.
  std::vector<float> x, xn, qkv, q, att, h;
  std::vector<int32_t> ids;

  // Weights used in place (W = float only): pointers into memory that `owner` keeps alive.
  std::shared_ptr<const void> owner;
  TypedImpl(const Config& c, const std::function<const float*(const std::string&)>& tensor,
            std::shared_ptr<const void> keep_alive, const float* head) {
    static_assert(std::is_same_v<W, float>);
    config = c;
    owner = std::move(keep_alive);
    bytes = param_layout(c).size() * sizeof(float);
    bind(tensor, tensor);
    lm_head = head ? head : wte;
    if (head) bytes += static_cast<size_t>(c.vocab_size) * c.n_embd * sizeof(float);
  }

  // Points the views at the tensors: w(name) for matrices (in W), f(name) for f32 tensors.
  template <class MatrixFn, class SmallFn>
  void bind(const MatrixFn& w, const SmallFn& f) {
    wte = w("wte.weight");
    lm_head = wte;
    wpe = f("wpe.weight");
    for (int i = 0; i < config.n_layer; ++i) {
      const std::string p = "h." + std::to_string(i) + ".";
      layers.push_back({f(p + "ln_1.weight"), f(p + "ln_1.bias"), f(p + "attn.c_attn.bias"),
                        f(p + "attn.c_proj.bias"), f(p + "ln_2.weight"), f(p + "ln_2.bias"),
                        f(p + "mlp.c_fc.bias"), f(p + "mlp.c_proj.bias"),
                        w(p + "attn.c_attn.weight"), w(p + "attn.c_proj.weight"),
                        w(p + "mlp.c_fc.weight"), w(p + "mlp.c_proj.weight")});
    }
    lnf_w = f("ln_f.weight");
    lnf_b = f("ln_f.bias");
  }

  // Weights owned by the model: the matrices (and wte) in W, the small tensors in f32, each
  // read straight into its place by `read` (no f32 copy of the whole model in between).
  TypedImpl(const Config& c, const Model::TensorReader& read, bool untied_head) {
    config = c;
    const ParamLayout L = param_layout(c);
    const DType wd = storage_dtype();
    std::map<std::string, size_t> small_offset;
    size_t n_matrix = 0, n_small = 0;
    for (const ParamEntry& e : L.entries()) {
      if (is_matrix(e)) {
        n_matrix += e.numel;
      } else {
        small_offset[e.name] = n_small;
        n_small += e.numel;
      }
    }
    matrices.resize(n_matrix);
    small.resize(n_small);
    if (!std::is_same_v<W, float> && k::can_tile(c.n_embd, c.mlp_dim()))
      conv_layout = k::Layout::tiles;
    AlignedVector<W> unpacked;  // one Conv1D matrix as read, before tiling
    std::map<std::string, size_t> matrix_offset;
    n_matrix = 0;
    for (const ParamEntry& e : L.entries()) {
      if (is_matrix(e)) {
        matrix_offset[e.name] = n_matrix;
        W* dst = matrices.data() + n_matrix;
        if (conv_layout == k::Layout::tiles && e.name != "wte.weight") {
          unpacked.resize(e.numel);
          read(e.name, wd, unpacked.data(), e.numel);
          k::pack_tiles(dst, unpacked.data(), e.shape[0], e.shape[1]);
        } else {
          read(e.name, wd, dst, e.numel);
        }
        n_matrix += e.numel;
      } else {
        read(e.name, DType::f32, small.data() + small_offset.at(e.name), e.numel);
      }
    }
    bytes = matrices.size() * sizeof(W) + small.size() * sizeof(float);
    bind([&](const std::string& n) { return matrices.data() + matrix_offset.at(n); },
         [&](const std::string& n) -> const float* { return small.data() + small_offset.at(n); });
    if (untied_head) {
      lm_head_storage.resize(static_cast<size_t>(c.vocab_size) * c.n_embd);
      read("lm_head.weight", wd, lm_head_storage.data(), lm_head_storage.size());
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
    bind(at, at);
    if (!head.empty()) {
      flat_head = std::move(head);
      bytes += flat_head.size() * sizeof(float);
      lm_head = flat_head.data();
    }
  }

  static bool is_matrix(const ParamEntry& e) {
    return e.shape.size() == 2 && e.name != "wpe.weight";
  }
  static DType storage_dtype() {
    if constexpr (std::is_same_v<W, k::Bf16>) return DType::bf16;
    if constexpr (std::is_same_v<W, k::F16>) return DType::f16;
    return DType::f32;
  }

  size_t weight_bytes() const override { return bytes; }

  void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits, int64_t first,
               bool gemm_head) override {
    const Config& c = config;
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t C = c.n_embd, F = c.mlp_dim(), V = c.vocab_size, cap = cache.capacity;
    const int64_t t0 = cache.length, t1 = t0 + n;
    check(n > 0, "gpt2: forward of zero tokens");
    check(t1 <= cap, "gpt2: ", t1, " positions exceed the cache capacity (", cap, ")");
    check(first >= 0 && first < n, "gpt2: first logits row ", first, " outside 0..", n - 1);
    check(logits.size() == static_cast<size_t>((n - first) * V), "gpt2: logits buffer of ",
          logits.size(), " values, expected ", (n - first) * V);
    for (int t : tokens)
      check(t >= 0 && t < V, "gpt2: token id ", t, " outside the vocabulary [0, ", V, ")");
    x.resize(n * C);
    xn.resize(n * C);
    qkv.resize(n * 3 * C);
    q.resize(n * C);
    att.resize(n * C);
    h.resize(n * F);
    ids.assign(tokens.begin(), tokens.end());
    k::embedding_forward(x.data(), ids.data(), wte, wpe, n, C, t0);  // wte[token] + wpe[position]
    W* kc = reinterpret_cast<W*>(cache.keys.data());
    W* vc = reinterpret_cast<W*>(cache.values.data());
    const int64_t key_block = C * k::kv_key_stride(cap);
    const float eps = static_cast<float>(c.layer_norm_epsilon);
    for (int64_t li = 0; li < c.n_layer; ++li) {
      const Layer& l = layers[li];
      W* kl = kc + li * key_block;
      W* vl = vc + li * cap * C;
      k::layernorm_forward(xn.data(), nullptr, nullptr, x.data(), l.ln1_w, l.ln1_b, n, C, eps);
      k::matmul_in_out(qkv.data(), xn.data(), l.attn_w, l.attn_b, n, C, 3 * C, conv_layout);
      for (int64_t r = 0; r < n; ++r) {
        const float* row = qkv.data() + r * 3 * C;
        std::memcpy(q.data() + r * C, row, C * sizeof(float));
        k::kv_store(kl, vl, row + C, row + 2 * C, t0 + r, cap, C);
      }
      k::attention_cached(att.data(), q.data(), kl, vl, t0, t1, cap, C, c.n_head);
      k::matmul_in_out(xn.data(), att.data(), l.proj_w, l.proj_b, n, C, C, conv_layout);
      for (int64_t i = 0; i < n * C; ++i) x[i] += xn[i];
      k::layernorm_forward(xn.data(), nullptr, nullptr, x.data(), l.ln2_w, l.ln2_b, n, C, eps);
      k::matmul_in_out(h.data(), xn.data(), l.fc_w, l.fc_b, n, C, F, conv_layout);
      k::gelu_forward(h.data(), h.data(), n * F);
      k::matmul_in_out(xn.data(), h.data(), l.fc_proj_w, l.fc_proj_b, n, F, C, conv_layout);
      for (int64_t i = 0; i < n * C; ++i) x[i] += xn[i];
    }
    cache.length = static_cast<int>(t1);
    const int64_t rows = n - first;
    k::layernorm_forward(xn.data(), nullptr, nullptr, x.data() + first * C, lnf_w, lnf_b, rows, C,
                         eps);
    if constexpr (std::is_same_v<W, float>) {
      // Every row's logits (perplexity): the head is 30% of 124M's FLOPs per token, and the
      // library GEMM runs it at several times the streaming kernel's rate.
      if (gemm_head && rows >= kGemmHeadRows) {
        k::gemm(k::Trans::No, k::Trans::Yes, rows, V, C, 1.0f, xn.data(), C, lm_head, C, 0.0f,
                logits.data(), V);
        return;
      }
    }
    k::matmul_out_in(logits.data(), xn.data(), lm_head, rows, C, V);
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
  const TensorReader read = [&](const std::string& name, DType to, void* out, size_t numel) {
    const float* src =
        name == "lm_head.weight" ? lm_head.data() : params.data() + L.at(name).offset;
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
                              std::shared_ptr<const void> owner, bool untied_head) {
  config.validate();
  Model m;
  m.impl_ = quant_impl_from_views(config, dtype, tensor, std::move(owner), untied_head);
  return m;
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

const Config& Model::config() const { return impl_->config; }
DType Model::dtype() const { return impl_->dtype; }
size_t Model::weight_bytes() const { return impl_->weight_bytes(); }

KvCache Model::new_cache(int capacity) const {
  const Config& c = impl_->config;
  check(capacity >= 1 && capacity <= c.n_positions, "gpt2: cache capacity ", capacity,
        " outside 1..n_positions (", c.n_positions, ")");
  KvCache cache;
  cache.capacity = capacity;
  // Keys transposed per head, each head's rows padded to a multiple of 16 positions
  // (kernels/attention/causal.h); values as rows.
  const size_t per_layer = static_cast<size_t>(c.n_embd) * dtype_size(impl_->cache_dtype);
  cache.keys.resize(c.n_layer * per_layer * static_cast<size_t>(kernels::kv_key_stride(capacity)));
  cache.values.resize(c.n_layer * per_layer * static_cast<size_t>(capacity));
  return cache;
}

void Model::forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                    bool all_logits) {
  impl_->forward(tokens, cache, logits, all_logits ? 0 : static_cast<int64_t>(tokens.size()) - 1,
                 false);
}

void Model::forward_rows(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                         int64_t first_row) {
  impl_->forward(tokens, cache, logits, first_row, true);
}

}  // namespace tinylm::gpt2
