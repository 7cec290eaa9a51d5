// microgpt through explicit kernels. One forward computes any range of positions against
// the positions before it (a KV cache): training runs a whole document's positions through
// each layer at once (the tokens are known), sampling runs one position at a time.
// Activations live in an arena planned for block_size positions, so a step allocates
// nothing; the backward calls each layer's backward in reverse order. Forward values equal
// the scalar engine's bit for bit; gradients agree to rounding (a value with several
// consumers sums their gradients in kernel order, not in the scalar graph's order).
#include <algorithm>
#include <cmath>

#include "tinylm/core/arena.h"
#include "tinylm/core/error.h"
#include "tinylm/core/py_math.h"
#include "tinylm/kernels/activation/relu.h"
#include "tinylm/kernels/activation/softmax.h"
#include "tinylm/kernels/attention/exact.h"
#include "tinylm/kernels/matmul/exact.h"
#include "tinylm/kernels/norm/rmsnorm.h"
#include "tinylm/models/microgpt/model.h"
#include "tinylm/models/microgpt/tensors.h"

namespace tinylm::microgpt {
namespace {

namespace k = tinylm::kernels;
constexpr double kEps = 1e-5;

// Activations of one layer for T positions; C channels, F = 4C MLP width, H heads. The
// gradient buffers have the same shapes.
struct LayerActs {
  std::span<double> x_in;     // (T, C) residual input
  std::span<double> xn1;      // (T, C) rmsnorm(x_in)
  std::span<double> s1;       // (T)    its scales
  std::span<double> q, k, v;  // (T, C)
  std::span<double> att;      // (H, T, T) attention weights
  std::span<double> att_out;  // (T, C)
  std::span<double> x_mid;    // (T, C) x_in + Wo att_out
  std::span<double> xn2;      // (T, C) rmsnorm(x_mid)
  std::span<double> s2;       // (T)
  std::span<double> h;        // (T, F) fc1 output
  std::span<double> hr;       // (T, F) relu(h)
};

class TensorModel final : public Model {
 public:
  explicit TensorModel(const Config& c) : Model(c), T_(c.block_size) {
    const size_t T = T_, C = c.n_embd, F = c.mlp_dim(), H = c.n_head, V = c.vocab_size;
    const auto fp = [](size_t n) { return Arena::footprint<double>(n); };
    const size_t per_layer = 8 * fp(T * C) + 2 * fp(T) + fp(H * T * T) + 2 * fp(T * F);
    arena_ = Arena(2 * per_layer * c.n_layer + 6 * fp(T * C) + fp(T) * 2 + 3 * fp(T * V));
    acts_ = plan_layers();
    grads_acts_ = plan_layers();
    emb_ = arena_.alloc<double>(T * C);
    x0_ = arena_.alloc<double>(T * C);
    s0_ = arena_.alloc<double>(T);
    x_out_ = arena_.alloc<double>(T * C);
    logits_ = arena_.alloc<double>(T * V);
    probs_ = arena_.alloc<double>(T * V);
    d_emb_ = arena_.alloc<double>(T * C);
    d_x_ = arena_.alloc<double>(T * C);
    d_logits_ = arena_.alloc<double>(T * V);
    scratch_ = arena_.alloc<double>(T);
    att_scale_ = py_pow(py_pow(static_cast<double>(c.head_dim()), 0.5), -1.0);  // / hd**0.5
    at_ = param_offsets(c);

    // Transposed, padded copies of every multiplied matrix (all but the embeddings), one
    // after another: the forward reads them so that its products vectorize.
    size_t wt_size = 0;
    for_each_tensor(c, at_t_, [&](const TensorSpec& t, size_t& at) {
      if (t.role != ParamRole::matrix) return;
      const ParamEntry& e = layout().at(t.name);
      transposed_.push_back({e.offset, wt_size, e.shape[0], e.shape[1]});
      at = wt_size;
      wt_size += static_cast<size_t>(e.shape[1] * k::padded_width(e.shape[0]));
    });
    wt_.assign(wt_size, 0.0);
  }

  double loss(std::span<const int> tokens) override { return run(tokens, false); }
  double loss_and_grad(std::span<const int> tokens) override { return run(tokens, true); }

  void start_sequence() override {
    refresh_transposed();
    cache_len_ = 0;
  }

  std::span<const double> next_logits(int token) override {
    check_tokens(std::span(&token, 1));
    check(cache_len_ < T_, "microgpt: sequence longer than block_size (", T_, ")");
    const int64_t t = cache_len_++;
    forward(std::span(&token, 1), t);
    const int64_t V = config_.vocab_size;
    return {logits_.data() + t * V, static_cast<size_t>(V)};
  }

 private:
  struct Transposed {
    size_t from, to;
    int64_t rows, cols;
  };

  std::vector<LayerActs> plan_layers() {
    const size_t T = T_, C = config_.n_embd, F = config_.mlp_dim(), H = config_.n_head;
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

  void refresh_transposed() {
    const double* p = params_.flat().data();
    for (const Transposed& t : transposed_) {
      k::transpose_padded(wt_.data() + t.to, p + t.from, t.rows, t.cols);
    }
  }

  // Forward of positions [t0, t0 + tokens.size()) into the layer activations and logits_,
  // attending to the cached positions before t0. Returns the final hidden rows (T, C).
  const double* forward(std::span<const int> tokens, int64_t t0) {
    const Config& c = config_;
    const int64_t n = static_cast<int64_t>(tokens.size()), t1 = t0 + n;
    const int64_t C = c.n_embd, F = c.mlp_dim(), V = c.vocab_size, H = c.n_head;
    const double* wte = params_.flat().data() + at_.wte;
    const double* wpe = params_.flat().data() + at_.wpe;
    const auto rows = [&](std::span<double> buf, int64_t width) { return buf.data() + t0 * width; };
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t i = 0; i < C; ++i) {
        emb_[t * C + i] = wte[tokens[t - t0] * C + i] + wpe[t * C + i];
      }
    }
    k::rmsnorm_forward(rows(x0_, C), rows(s0_, 1), rows(emb_, C), n, C, kEps);
    const double* x = rows(x0_, C);
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerOffsets& o = at_t_.layers[l];
      const double* wt = wt_.data();
      LayerActs& a = acts_[l];
      std::copy(x, x + n * C, rows(a.x_in, C));
      k::rmsnorm_forward(rows(a.xn1, C), rows(a.s1, 1), rows(a.x_in, C), n, C, kEps);
      k::linear_forward_packed(rows(a.q, C), rows(a.xn1, C), wt + o.wq, n, C, C);
      k::linear_forward_packed(rows(a.k, C), rows(a.xn1, C), wt + o.wk, n, C, C);
      k::linear_forward_packed(rows(a.v, C), rows(a.xn1, C), wt + o.wv, n, C, C);
      k::attention_forward(a.att_out.data(), a.att.data(), a.q.data(), a.k.data(), a.v.data(), t0,
                           t1, C, H, T_, att_scale_);
      k::linear_forward_packed(rows(a.x_mid, C), rows(a.att_out, C), wt + o.wo, n, C, C);
      for (int64_t i = t0 * C; i < t1 * C; ++i) a.x_mid[i] += a.x_in[i];
      k::rmsnorm_forward(rows(a.xn2, C), rows(a.s2, 1), rows(a.x_mid, C), n, C, kEps);
      k::linear_forward_packed(rows(a.h, F), rows(a.xn2, C), wt + o.fc1, n, C, F);
      k::relu_forward(rows(a.hr, F), rows(a.h, F), n * F);
      k::linear_forward_packed(rows(x_out_, C), rows(a.hr, F), wt + o.fc2, n, F, C);
      for (int64_t i = t0 * C; i < t1 * C; ++i) x_out_[i] += a.x_mid[i];
      x = rows(x_out_, C);
    }
    k::linear_forward_packed(rows(logits_, V), x, wt_.data() + at_t_.lm_head, n, C, V);
    return x_out_.data();
  }

  double run(std::span<const int> tokens, bool with_grad) {
    check_tokens(tokens);
    if (tokens.size() < 2) return 0.0;
    const Config& c = config_;
    const int64_t T = std::min<int64_t>(T_, static_cast<int64_t>(tokens.size()) - 1);
    const int64_t C = c.n_embd, F = c.mlp_dim(), V = c.vocab_size, H = c.n_head;
    refresh_transposed();
    cache_len_ = 0;  // the forward below overwrites any sampling cache
    const double* x = forward(tokens.first(T), 0);

    // loss = (1/T) * sum_t -log softmax(logits_t)[target], in microgpt.py's order
    double sum = 0.0;
    for (int64_t t = 0; t < T; ++t) {
      double* p = probs_.data() + t * V;
      k::softmax_forward(p, logits_.data() + t * V, V);
      sum += std::log(p[tokens[t + 1]]) * -1.0;
    }
    const double inv_T = 1.0 / static_cast<double>(T);
    const double loss = sum * inv_T;
    if (!with_grad) return loss;

    // dlogits = (softmax - onehot) / T
    for (int64_t t = 0; t < T; ++t) {
      const double* p = probs_.data() + t * V;
      double* d = d_logits_.data() + t * V;
      for (int64_t i = 0; i < V; ++i) d[i] = p[i] * inv_T;
      d[tokens[t + 1]] -= inv_T;
    }
    const double* w = params_.flat().data();
    double* g = grads_.data();
    const auto zero = [&](std::span<double> buf, int64_t n) { std::fill_n(buf.begin(), n, 0.0); };
    zero(d_x_, T * C);
    k::linear_backward(d_x_.data(), g + at_.lm_head, d_logits_.data(), x, w + at_.lm_head, T, C, V);
    for (int l = c.n_layer - 1; l >= 0; --l) {
      const LayerOffsets& o = at_.layers[l];
      LayerActs& a = acts_[l];
      LayerActs& d = grads_acts_[l];
      // x_out = x_mid + fc2(relu(fc1(rmsnorm(x_mid))))
      std::copy_n(d_x_.begin(), T * C, d.x_mid.begin());
      zero(d.hr, T * F);
      k::linear_backward(d.hr.data(), g + o.fc2, d_x_.data(), a.hr.data(), w + o.fc2, T, F, C);
      zero(d.h, T * F);
      k::relu_backward(d.h.data(), d.hr.data(), a.h.data(), T * F);
      zero(d.xn2, T * C);
      k::linear_backward(d.xn2.data(), g + o.fc1, d.h.data(), a.xn2.data(), w + o.fc1, T, C, F);
      k::rmsnorm_backward(d.x_mid.data(), d.xn2.data(), a.x_mid.data(), a.s2.data(), T, C, kEps);
      // x_mid = x_in + wo(attention(W rmsnorm(x_in)))
      std::copy_n(d.x_mid.begin(), T * C, d.x_in.begin());
      zero(d.att_out, T * C);
      k::linear_backward(d.att_out.data(), g + o.wo, d.x_mid.data(), a.att_out.data(), w + o.wo, T,
                         C, C);
      zero(d.q, T * C);
      zero(d.k, T * C);
      zero(d.v, T * C);
      k::attention_backward(d.q.data(), d.k.data(), d.v.data(), scratch_.data(), d.att_out.data(),
                            a.att.data(), a.q.data(), a.k.data(), a.v.data(), T, C, H, T_,
                            att_scale_);
      zero(d.xn1, T * C);
      k::linear_backward(d.xn1.data(), g + o.wv, d.v.data(), a.xn1.data(), w + o.wv, T, C, C);
      k::linear_backward(d.xn1.data(), g + o.wk, d.k.data(), a.xn1.data(), w + o.wk, T, C, C);
      k::linear_backward(d.xn1.data(), g + o.wq, d.q.data(), a.xn1.data(), w + o.wq, T, C, C);
      k::rmsnorm_backward(d.x_in.data(), d.xn1.data(), a.x_in.data(), a.s1.data(), T, C, kEps);
      std::copy_n(d.x_in.begin(), T * C, d_x_.begin());  // into the layer below
    }
    // x0 = rmsnorm(wte[token] + wpe[pos])
    zero(d_emb_, T * C);
    k::rmsnorm_backward(d_emb_.data(), d_x_.data(), emb_.data(), s0_.data(), T, C, kEps);
    for (int64_t t = T - 1; t >= 0; --t) {
      for (int64_t i = 0; i < C; ++i) {
        g[at_.wte + tokens[t] * C + i] += d_emb_[t * C + i];
        g[at_.wpe + t * C + i] += d_emb_[t * C + i];
      }
    }
    return loss;
  }

  const int64_t T_;  // block_size: rows planned for every buffer
  Arena arena_;
  std::vector<LayerActs> acts_, grads_acts_;
  std::span<double> emb_, x0_, s0_, x_out_, logits_, probs_;
  std::span<double> d_emb_, d_x_, d_logits_, scratch_;
  ParamIndex at_;    // every tensor's offset in the flat parameters (and gradients)
  ParamIndex at_t_;  // the multiplied matrices' offsets in wt_
  std::vector<Transposed> transposed_;
  std::vector<double> wt_;  // transposed, padded copies of the multiplied matrices
  double att_scale_ = 1.0;
  int64_t cache_len_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_tensor_model(const Config& config) {
  return std::make_unique<TensorModel>(config);
}

}  // namespace tinylm::microgpt
