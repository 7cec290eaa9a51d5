#include "tinylm/models/gpt2/model.h"

#include <cstring>

#include "tinylm/core/error.h"
#include "tinylm/kernels/gpt_ops.h"

namespace tinylm::gpt2 {

namespace k = tinylm::kernels;

struct Model::Impl {
  Config config;
  DType dtype;
  virtual ~Impl() = default;
  virtual size_t weight_bytes() const = 0;
  virtual void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                       bool all_logits) = 0;
};

namespace {

template <class W>
std::vector<W> convert(std::span<const float> in) {
  std::vector<W> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) k::from_float(out[i], in[i]);
  return out;
}

// The model for one storage type W (float, Bf16 or F16) of weights and KV cache.
template <class W>
struct TypedImpl final : Model::Impl {
  struct Layer {
    std::vector<float> ln1_w, ln1_b, attn_b, proj_b, ln2_w, ln2_b, fc_b, fc_proj_b;
    std::vector<W> attn_w, proj_w, fc_w, fc_proj_w;
  };
  std::vector<W> wte, lm_head;  // lm_head empty when tied
  std::vector<float> wpe, lnf_w, lnf_b;
  std::vector<Layer> layers;
  // Scratch for one forward of up to `rows` positions, grown on demand.
  std::vector<float> x, xn, qkv, q, att, h, logits_rows;

  TypedImpl(const Config& c, std::span<const float> params, std::span<const float> head) {
    config = c;
    const ParamLayout L = param_layout(c);
    const auto get = [&](const std::string& n) {
      const ParamEntry& e = L.at(n);
      return params.subspan(e.offset, e.numel);
    };
    const auto f32 = [&](const std::string& n) {
      const auto s = get(n);
      return std::vector<float>(s.begin(), s.end());
    };
    wte = convert<W>(get("wte.weight"));
    if (!head.empty()) lm_head = convert<W>(head);
    wpe = f32("wpe.weight");
    for (int i = 0; i < c.n_layer; ++i) {
      const std::string p = "h." + std::to_string(i) + ".";
      Layer l;
      l.ln1_w = f32(p + "ln_1.weight");
      l.ln1_b = f32(p + "ln_1.bias");
      l.attn_w = convert<W>(get(p + "attn.c_attn.weight"));
      l.attn_b = f32(p + "attn.c_attn.bias");
      l.proj_w = convert<W>(get(p + "attn.c_proj.weight"));
      l.proj_b = f32(p + "attn.c_proj.bias");
      l.ln2_w = f32(p + "ln_2.weight");
      l.ln2_b = f32(p + "ln_2.bias");
      l.fc_w = convert<W>(get(p + "mlp.c_fc.weight"));
      l.fc_b = f32(p + "mlp.c_fc.bias");
      l.fc_proj_w = convert<W>(get(p + "mlp.c_proj.weight"));
      l.fc_proj_b = f32(p + "mlp.c_proj.bias");
      layers.push_back(std::move(l));
    }
    lnf_w = f32("ln_f.weight");
    lnf_b = f32("ln_f.bias");
  }

  size_t weight_bytes() const override {
    size_t n = (wte.size() + lm_head.size()) * sizeof(W) + (wpe.size() + lnf_w.size() + lnf_b.size()) * 4;
    for (const Layer& l : layers) {
      n += (l.attn_w.size() + l.proj_w.size() + l.fc_w.size() + l.fc_proj_w.size()) * sizeof(W);
      n += (l.ln1_w.size() + l.ln1_b.size() + l.attn_b.size() + l.proj_b.size() + l.ln2_w.size() +
            l.ln2_b.size() + l.fc_b.size() + l.fc_proj_b.size()) * 4;
    }
    return n;
  }

  void forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
               bool all_logits) override {
    const Config& c = config;
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t C = c.n_embd, F = c.mlp_dim(), V = c.vocab_size, cap = cache.capacity;
    const int64_t t0 = cache.length, t1 = t0 + n;
    check(n > 0, "gpt2: forward of zero tokens");
    check(t1 <= cap, "gpt2: ", t1, " positions exceed the cache capacity (", cap, ")");
    check(logits.size() == static_cast<size_t>(all_logits ? n * V : V), "gpt2: logits buffer of ",
          logits.size(), " values, expected ", all_logits ? n * V : V);
    for (int t : tokens) check(t >= 0 && t < V, "gpt2: token id ", t, " outside the vocabulary [0, ", V, ")");
    x.resize(n * C);
    xn.resize(n * C);
    qkv.resize(n * 3 * C);
    q.resize(n * C);
    att.resize(n * C);
    h.resize(n * F);
    // x = wte[token] + wpe[position]
    for (int64_t r = 0; r < n; ++r) {
      const W* e = wte.data() + static_cast<int64_t>(tokens[r]) * C;
      const float* pe = wpe.data() + (t0 + r) * C;
      for (int64_t i = 0; i < C; ++i) x[r * C + i] = k::to_float(e[i]) + pe[i];
    }
    W* kc = reinterpret_cast<W*>(cache.keys.data());
    W* vc = reinterpret_cast<W*>(cache.values.data());
    const float eps = static_cast<float>(c.layer_norm_epsilon);
    for (int64_t li = 0; li < c.n_layer; ++li) {
      const Layer& l = layers[li];
      W* kl = kc + li * cap * C;
      W* vl = vc + li * cap * C;
      k::layernorm_forward(xn.data(), x.data(), l.ln1_w.data(), l.ln1_b.data(), n, C, eps);
      k::matmul_in_out(qkv.data(), xn.data(), l.attn_w.data(), l.attn_b.data(), n, C, 3 * C);
      for (int64_t r = 0; r < n; ++r) {
        const float* row = qkv.data() + r * 3 * C;
        std::memcpy(q.data() + r * C, row, C * sizeof(float));
        for (int64_t i = 0; i < C; ++i) {
          k::from_float(kl[(t0 + r) * C + i], row[C + i]);
          k::from_float(vl[(t0 + r) * C + i], row[2 * C + i]);
        }
      }
      k::attention_cached(att.data(), q.data(), kl, vl, t0, t1, C, c.n_head);
      k::matmul_in_out(xn.data(), att.data(), l.proj_w.data(), l.proj_b.data(), n, C, C);
      for (int64_t i = 0; i < n * C; ++i) x[i] += xn[i];
      k::layernorm_forward(xn.data(), x.data(), l.ln2_w.data(), l.ln2_b.data(), n, C, eps);
      k::matmul_in_out(h.data(), xn.data(), l.fc_w.data(), l.fc_b.data(), n, C, F);
      k::gelu_tanh_forward(h.data(), h.data(), n * F);
      k::matmul_in_out(xn.data(), h.data(), l.fc_proj_w.data(), l.fc_proj_b.data(), n, F, C);
      for (int64_t i = 0; i < n * C; ++i) x[i] += xn[i];
    }
    cache.length = static_cast<int>(t1);
    const int64_t first = all_logits ? 0 : n - 1, rows = n - first;
    k::layernorm_forward(xn.data(), x.data() + first * C, lnf_w.data(), lnf_b.data(), rows, C, eps);
    const W* head = lm_head.empty() ? wte.data() : lm_head.data();
    k::matmul_out_in(logits.data(), xn.data(), head, rows, C, V);
  }
};

}  // namespace

Model::Model(const Config& config, std::span<const float> params, DType dtype,
             std::span<const float> lm_head) {
  config.validate();
  check(params.size() == param_layout(config).size(), "gpt2: ", params.size(),
        " parameters given, the configuration has ", param_layout(config).size());
  check(lm_head.empty() || lm_head.size() == static_cast<size_t>(config.vocab_size) * config.n_embd,
        "gpt2: lm_head has ", lm_head.size(), " values, expected vocab_size * n_embd");
  switch (dtype) {
    case DType::f32: impl_ = std::make_unique<TypedImpl<float>>(config, params, lm_head); break;
    case DType::bf16: impl_ = std::make_unique<TypedImpl<k::Bf16>>(config, params, lm_head); break;
    case DType::f16: impl_ = std::make_unique<TypedImpl<k::F16>>(config, params, lm_head); break;
    default: fail("gpt2: unsupported dtype ", dtype_name(dtype), " (expected f32, bf16 or f16)");
  }
  impl_->dtype = dtype;
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
  const size_t bytes = static_cast<size_t>(c.n_layer) * capacity * c.n_embd * dtype_size(impl_->dtype);
  cache.keys.resize(bytes);
  cache.values.resize(bytes);
  return cache;
}

void Model::forward(std::span<const int> tokens, KvCache& cache, std::span<float> logits,
                    bool all_logits) {
  impl_->forward(tokens, cache, logits, all_logits);
}

}  // namespace tinylm::gpt2
