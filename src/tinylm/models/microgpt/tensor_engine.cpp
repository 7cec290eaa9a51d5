// microgpt through explicit kernels: the whole document's positions go through each layer
// at once (the tokens are known), activations live in an arena planned for block_size
// positions, and the backward calls each layer's backward in reverse order. Forward values
// equal the scalar engine's bit for bit; gradients agree to rounding (sums of several
// consumers are added in a different order than a scalar graph does).
#include <cmath>
#include <map>

#include "tinylm/core/arena.h"
#include "tinylm/core/error.h"
#include "tinylm/core/py_math.h"
#include "tinylm/kernels/attention.h"
#include "tinylm/kernels/linear.h"
#include "tinylm/kernels/relu.h"
#include "tinylm/kernels/rmsnorm.h"
#include "tinylm/kernels/softmax.h"
#include "tinylm/models/microgpt/model.h"

namespace tinylm::microgpt {
namespace {

namespace k = tinylm::kernels;
constexpr double kEps = 1e-5;

// Per-layer weights (views into the flat buffer) and their gradients.
struct LayerWeights {
  const double *wq, *wk, *wv, *wo, *fc1, *fc2;
};
struct LayerGrads {
  double *wq, *wk, *wv, *wo, *fc1, *fc2;
};

// Activations of one layer for T positions; C channels, F = 4C MLP width, H heads.
struct LayerActs {
  std::span<double> x_in;     // (T, C) residual input
  std::span<double> xn1;      // (T, C) rmsnorm(x_in)
  std::span<double> s1;       // (T)
  std::span<double> q, k, v;  // (T, C)
  std::span<double> att;      // (H, T, T)
  std::span<double> att_out;  // (T, C)
  std::span<double> x_mid;    // (T, C) x_in + Wo att_out
  std::span<double> xn2;      // (T, C)
  std::span<double> s2;       // (T)
  std::span<double> h;        // (T, F) fc1 output
  std::span<double> hr;       // (T, F) relu(h)
};

class TensorModel final : public Model {
 public:
  explicit TensorModel(const Config& c) : Model(c) {
    const size_t T = c.block_size, C = c.n_embd, F = c.mlp_dim(), H = c.n_head, V = c.vocab_size;
    // Plan: forward activations for T positions, plus gradient buffers of the same shapes.
    const size_t per_layer = 2 * (Arena::footprint<double>(T * C) * 8 + Arena::footprint<double>(T) * 2 +
                                  Arena::footprint<double>(H * T * T) + Arena::footprint<double>(T * F) * 2);
    const size_t global = 2 * (Arena::footprint<double>(T * C) * 3 + Arena::footprint<double>(T) +
                               Arena::footprint<double>(T * V) * 2) +
                          Arena::footprint<double>(T) * 2 + Arena::footprint<int>(T);
    arena_ = Arena(per_layer * c.n_layer + global);
    acts_ = plan(T);
    grads_acts_ = plan(T);
    emb_ = arena_.alloc<double>(T * C);
    x0_ = arena_.alloc<double>(T * C);
    s0_ = arena_.alloc<double>(T);
    x_out_ = arena_.alloc<double>(T * C);
    logits_ = arena_.alloc<double>(T * V);
    probs_ = arena_.alloc<double>(T * V);
    d_emb_ = arena_.alloc<double>(T * C);
    d_x_out_ = arena_.alloc<double>(T * C);
    d_logits_ = arena_.alloc<double>(T * V);
    scratch_ = arena_.alloc<double>(T);
    att_scale_ = py_pow(py_pow(static_cast<double>(c.head_dim()), 0.5), -1.0);
    const ParamLayout& L = layout();
    for (int i = 0; i < c.n_layer; ++i) {
      const std::string p = "layer" + std::to_string(i) + ".";
      offsets_.push_back({L.at(p + "attn_wq").offset, L.at(p + "attn_wk").offset,
                          L.at(p + "attn_wv").offset, L.at(p + "attn_wo").offset,
                          L.at(p + "mlp_fc1").offset, L.at(p + "mlp_fc2").offset});
    }
    // Transposed, padded copies of the multiplied matrices, one after another.
    size_t wt_size = 0;
    for (const ParamEntry& e : L.entries()) {
      if (e.name == "wte" || e.name == "wpe") continue;
      wt_offset_[e.name] = wt_size;
      wt_size += static_cast<size_t>(e.shape[1] * k::padded_width(e.shape[0]));
    }
    wt_.assign(wt_size, 0.0);
    lm_head_ = wt_offset_.at("lm_head");
    for (int i = 0; i < c.n_layer; ++i) {
      const std::string p = "layer" + std::to_string(i) + ".";
      wt_offsets_.push_back({wt_offset_.at(p + "attn_wq"), wt_offset_.at(p + "attn_wk"),
                             wt_offset_.at(p + "attn_wv"), wt_offset_.at(p + "attn_wo"),
                             wt_offset_.at(p + "mlp_fc1"), wt_offset_.at(p + "mlp_fc2")});
    }
  }

  double loss(std::span<const int> tokens) override { return run(tokens, false); }
  double loss_and_grad(std::span<const int> tokens) override { return run(tokens, true); }

  void start_sequence() override {
    refresh_transposed();
    cache_len_ = 0;
  }

  std::span<const double> next_probs(int token, double temperature) override {
    const Config& c = config_;
    check(token >= 0 && token < c.vocab_size, "microgpt: token id ", token, " outside the vocabulary");
    check(cache_len_ < c.block_size, "microgpt: sequence longer than block_size (", c.block_size, ")");
    // The KV cache is the k/v rows of earlier positions kept in the layer activations; the
    // new position is computed alone (rows = 1) against all cached rows.
    const int64_t t = cache_len_++;
    const int64_t C = c.n_embd, F = c.mlp_dim(), V = c.vocab_size;
    const double* wte = params_.view("wte").data;
    const double* wpe = params_.view("wpe").data;
    double* e = emb_.data() + t * C;
    for (int64_t i = 0; i < C; ++i) e[i] = wte[token * C + i] + wpe[t * C + i];
    k::rmsnorm_forward(x0_.data() + t * C, s0_.data() + t, e, 1, C, kEps);
    const double* x = x0_.data() + t * C;
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerWeights w = transposed_weights(l);
      LayerActs& a = acts_[l];
      std::copy(x, x + C, a.x_in.data() + t * C);
      k::rmsnorm_forward(a.xn1.data() + t * C, a.s1.data() + t, a.x_in.data() + t * C, 1, C, kEps);
      k::linear_forward_packed(a.q.data() + t * C, a.xn1.data() + t * C, w.wq, 1, C, C);
      k::linear_forward_packed(a.k.data() + t * C, a.xn1.data() + t * C, w.wk, 1, C, C);
      k::linear_forward_packed(a.v.data() + t * C, a.xn1.data() + t * C, w.wv, 1, C, C);
      attend_one(a, t);
      k::linear_forward_packed(a.x_mid.data() + t * C, a.att_out.data() + t * C, w.wo, 1, C, C);
      for (int64_t i = 0; i < C; ++i) a.x_mid[t * C + i] += a.x_in[t * C + i];
      k::rmsnorm_forward(a.xn2.data() + t * C, a.s2.data() + t, a.x_mid.data() + t * C, 1, C, kEps);
      k::linear_forward_packed(a.h.data() + t * F, a.xn2.data() + t * C, w.fc1, 1, C, F);
      k::relu_forward(a.hr.data() + t * F, a.h.data() + t * F, F);
      double* out = x_out_.data() + t * C;
      k::linear_forward_packed(out, a.hr.data() + t * F, w.fc2, 1, F, C);
      for (int64_t i = 0; i < C; ++i) out[i] += a.x_mid[t * C + i];
      x = out;
    }
    double* logits = logits_.data();
    k::linear_forward_packed(logits, x, wt_.data() + lm_head_, 1, C, V);
    const double inv_temp = py_pow(temperature, -1.0);  // microgpt.py: l / temperature
    for (int64_t i = 0; i < V; ++i) logits[i] = logits[i] * inv_temp;
    k::softmax_forward(probs_.data(), logits, V);
    return {probs_.data(), static_cast<size_t>(V)};
  }

 private:
  std::vector<LayerActs> plan(size_t T) {
    const size_t C = config_.n_embd, F = config_.mlp_dim(), H = config_.n_head;
    std::vector<LayerActs> out(config_.n_layer);
    for (LayerActs& a : out) {
      a.x_in = arena_.alloc<double>(T * C);
      a.xn1 = arena_.alloc<double>(T * C);
      a.s1 = arena_.alloc<double>(T);
      a.q = arena_.alloc<double>(T * C);
      a.k = arena_.alloc<double>(T * C);
      a.v = arena_.alloc<double>(T * C);
      a.att = arena_.alloc<double>(H * T * T);
      a.att_out = arena_.alloc<double>(T * C);
      a.x_mid = arena_.alloc<double>(T * C);
      a.xn2 = arena_.alloc<double>(T * C);
      a.s2 = arena_.alloc<double>(T);
      a.h = arena_.alloc<double>(T * F);
      a.hr = arena_.alloc<double>(T * F);
    }
    return out;
  }

  LayerWeights weights(int l) const {
    const LayerOffsets& o = offsets(l);
    const double* base = params_.flat().data();
    return {base + o.wq, base + o.wk, base + o.wv, base + o.wo, base + o.fc1, base + o.fc2};
  }
  LayerGrads layer_grads(int l) {
    const LayerOffsets& o = offsets(l);
    double* base = grads_.data();
    return {base + o.wq, base + o.wk, base + o.wv, base + o.wo, base + o.fc1, base + o.fc2};
  }
  struct LayerOffsets {
    size_t wq, wk, wv, wo, fc1, fc2;
  };
  const LayerOffsets& offsets(int l) const { return offsets_[l]; }

  // Forward products read each weight matrix transposed ([in][out], at the same offset in
  // wt_), which lets them vectorize across outputs with unchanged summation order.
  LayerWeights transposed_weights(int l) const {
    const LayerOffsets& o = wt_offsets_[l];
    const double* base = wt_.data();
    return {base + o.wq, base + o.wk, base + o.wv, base + o.wo, base + o.fc1, base + o.fc2};
  }
  void refresh_transposed() {
    const double* p = params_.flat().data();
    for (const ParamEntry& e : layout().entries()) {
      if (e.name == "wte" || e.name == "wpe") continue;  // looked up by row, never multiplied
      k::transpose_padded(wt_.data() + wt_offset_.at(e.name), p + e.offset, e.shape[0], e.shape[1]);
    }
  }

  // Attention of position t over the cached positions 0..t, per head (decode path).
  void attend_one(LayerActs& a, int64_t t) {
    const int64_t C = config_.n_embd, H = config_.n_head, hd = config_.head_dim();
    for (int64_t h = 0; h < H; ++h) {
      double* w = scratch_.data();
      const double* qt = a.q.data() + t * C + h * hd;
      for (int64_t s = 0; s <= t; ++s) {
        const double* ks = a.k.data() + s * C + h * hd;
        double dot = 0.0;
        for (int64_t j = 0; j < hd; ++j) dot += qt[j] * ks[j];
        w[s] = dot * att_scale_;
      }
      k::softmax_forward(w, w, t + 1);
      for (int64_t j = 0; j < hd; ++j) {
        double acc = 0.0;
        for (int64_t s = 0; s <= t; ++s) acc += w[s] * a.v[s * C + h * hd + j];
        a.att_out[t * C + h * hd + j] = acc;
      }
    }
  }

  double run(std::span<const int> tokens, bool with_grad) {
    check_tokens(tokens);
    if (tokens.size() < 2) return 0.0;
    const Config& c = config_;
    const int64_t T = std::min<int64_t>(c.block_size, static_cast<int64_t>(tokens.size()) - 1);
    const int64_t C = c.n_embd, F = c.mlp_dim(), V = c.vocab_size, H = c.n_head;
    const double* wte = params_.view("wte").data;
    const double* wpe = params_.view("wpe").data;
    const double* lm_head = params_.view("lm_head").data;

    // ---- forward ----
    refresh_transposed();
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < C; ++i) emb_[t * C + i] = wte[tokens[t] * C + i] + wpe[t * C + i];
    }
    k::rmsnorm_forward(x0_.data(), s0_.data(), emb_.data(), T, C, kEps);
    const double* x = x0_.data();
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerWeights w = transposed_weights(l);
      LayerActs& a = acts_[l];
      std::copy(x, x + T * C, a.x_in.data());
      k::rmsnorm_forward(a.xn1.data(), a.s1.data(), a.x_in.data(), T, C, kEps);
      k::linear_forward_packed(a.q.data(), a.xn1.data(), w.wq, T, C, C);
      k::linear_forward_packed(a.k.data(), a.xn1.data(), w.wk, T, C, C);
      k::linear_forward_packed(a.v.data(), a.xn1.data(), w.wv, T, C, C);
      k::attention_forward(a.att_out.data(), a.att.data(), a.q.data(), a.k.data(), a.v.data(), T, C, H,
                           att_scale_);
      k::linear_forward_packed(a.x_mid.data(), a.att_out.data(), w.wo, T, C, C);
      for (int64_t i = 0; i < T * C; ++i) a.x_mid[i] += a.x_in[i];
      k::rmsnorm_forward(a.xn2.data(), a.s2.data(), a.x_mid.data(), T, C, kEps);
      k::linear_forward_packed(a.h.data(), a.xn2.data(), w.fc1, T, C, F);
      k::relu_forward(a.hr.data(), a.h.data(), T * F);
      k::linear_forward_packed(x_out_.data(), a.hr.data(), w.fc2, T, F, C);
      for (int64_t i = 0; i < T * C; ++i) x_out_[i] += a.x_mid[i];
      x = x_out_.data();
    }
    k::linear_forward_packed(logits_.data(), x, wt_.data() + lm_head_, T, C, V);
    // loss = (1/T) * sum_t -log softmax(logits_t)[target]
    double sum = 0.0;
    for (int64_t t = 0; t < T; ++t) {
      double* p = probs_.data() + t * V;
      k::softmax_forward(p, logits_.data() + t * V, V);
      sum += std::log(p[tokens[t + 1]]) * -1.0;
    }
    const double inv_T = 1.0 / static_cast<double>(T);
    const double loss = sum * inv_T;
    if (!with_grad) return loss;

    // ---- backward ----
    // dlogits = (softmax - onehot) / T
    for (int64_t t = 0; t < T; ++t) {
      const double* p = probs_.data() + t * V;
      double* d = d_logits_.data() + t * V;
      for (int64_t i = 0; i < V; ++i) d[i] = p[i] * inv_T;
      d[tokens[t + 1]] -= inv_T;
    }
    double* g_lm_head = grads_.data() + layout().at("lm_head").offset;
    std::fill(d_x_out_.begin(), d_x_out_.begin() + T * C, 0.0);
    k::linear_backward(d_x_out_.data(), g_lm_head, d_logits_.data(), x, lm_head, T, C, V);
    for (int l = c.n_layer - 1; l >= 0; --l) {
      const LayerWeights w = weights(l);
      const LayerGrads g = layer_grads(l);
      LayerActs& a = acts_[l];
      LayerActs& d = grads_acts_[l];
      // x_out = x_mid + fc2(relu(fc1(rmsnorm(x_mid))))
      std::copy(d_x_out_.begin(), d_x_out_.begin() + T * C, d.x_mid.begin());
      std::fill(d.hr.begin(), d.hr.begin() + T * F, 0.0);
      k::linear_backward(d.hr.data(), g.fc2, d_x_out_.data(), a.hr.data(), w.fc2, T, F, C);
      std::fill(d.h.begin(), d.h.begin() + T * F, 0.0);
      k::relu_backward(d.h.data(), d.hr.data(), a.h.data(), T * F);
      std::fill(d.xn2.begin(), d.xn2.begin() + T * C, 0.0);
      k::linear_backward(d.xn2.data(), g.fc1, d.h.data(), a.xn2.data(), w.fc1, T, C, F);
      k::rmsnorm_backward(d.x_mid.data(), d.xn2.data(), a.x_mid.data(), a.s2.data(), T, C, kEps);
      // x_mid = x_in + wo(attention(q, k, v)), q/k/v = W rmsnorm(x_in)
      std::copy(d.x_mid.begin(), d.x_mid.begin() + T * C, d.x_in.begin());
      std::fill(d.att_out.begin(), d.att_out.begin() + T * C, 0.0);
      k::linear_backward(d.att_out.data(), g.wo, d.x_mid.data(), a.att_out.data(), w.wo, T, C, C);
      std::fill(d.q.begin(), d.q.begin() + T * C, 0.0);
      std::fill(d.k.begin(), d.k.begin() + T * C, 0.0);
      std::fill(d.v.begin(), d.v.begin() + T * C, 0.0);
      k::attention_backward(d.q.data(), d.k.data(), d.v.data(), scratch_.data(), d.att_out.data(),
                            a.att.data(), a.q.data(), a.k.data(), a.v.data(), T, C, H, att_scale_);
      std::fill(d.xn1.begin(), d.xn1.begin() + T * C, 0.0);
      k::linear_backward(d.xn1.data(), g.wv, d.v.data(), a.xn1.data(), w.wv, T, C, C);
      k::linear_backward(d.xn1.data(), g.wk, d.k.data(), a.xn1.data(), w.wk, T, C, C);
      k::linear_backward(d.xn1.data(), g.wq, d.q.data(), a.xn1.data(), w.wq, T, C, C);
      k::rmsnorm_backward(d.x_in.data(), d.xn1.data(), a.x_in.data(), a.s1.data(), T, C, kEps);
      std::copy(d.x_in.begin(), d.x_in.begin() + T * C, d_x_out_.begin());  // into the layer below
    }
    // x0 = rmsnorm(wte[token] + wpe[pos])
    std::fill(d_emb_.begin(), d_emb_.begin() + T * C, 0.0);
    k::rmsnorm_backward(d_emb_.data(), d_x_out_.data(), emb_.data(), s0_.data(), T, C, kEps);
    double* g_wte = grads_.data() + layout().at("wte").offset;
    double* g_wpe = grads_.data() + layout().at("wpe").offset;
    for (int64_t t = T - 1; t >= 0; --t) {
      for (int64_t i = 0; i < C; ++i) {
        g_wte[tokens[t] * C + i] += d_emb_[t * C + i];
        g_wpe[t * C + i] += d_emb_[t * C + i];
      }
    }
    return loss;
  }

  Arena arena_;
  std::vector<LayerActs> acts_, grads_acts_;
  std::vector<LayerOffsets> offsets_;
  std::span<double> emb_, x0_, s0_, x_out_, logits_, probs_;
  std::span<double> d_emb_, d_x_out_, d_logits_, scratch_;
  std::vector<double> wt_;  // transposed, padded copies of the weight matrices
  std::map<std::string, size_t> wt_offset_;
  std::vector<LayerOffsets> wt_offsets_;
  size_t lm_head_ = 0;
  double att_scale_ = 1.0;
  int cache_len_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_tensor_model(const Config& config) {
  return std::make_unique<TensorModel>(config);
}

}  // namespace tinylm::microgpt
