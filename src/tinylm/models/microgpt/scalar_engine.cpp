// microgpt on the scalar autograd graph, written operation for operation as microgpt.py's
// gpt(), softmax(), rmsnorm() and linear(), so the graph (and therefore every float of the
// forward and of the backward's accumulation order) is the same as Python's.
#include <cmath>

#include "tinylm/autograd/graph.h"
#include "tinylm/core/error.h"
#include "tinylm/core/py_math.h"
#include "tinylm/models/microgpt/model.h"
#include "tinylm/models/microgpt/tensors.h"

namespace tinylm::microgpt {
namespace {

using autograd::Graph;
using autograd::NodeId;
using Vec = std::vector<NodeId>;

class ScalarModel final : public Model {
 public:
  explicit ScalarModel(const Config& c) : Model(c), at_(param_offsets(c)) {
    for (double p : params_.flat()) g_.leaf(p);  // node i is parameter i
    n_params_ = g_.size();
  }

  double loss(std::span<const int> tokens) override { return run(tokens, false); }
  double loss_and_grad(std::span<const int> tokens) override { return run(tokens, true); }

  void start_sequence() override {
    sync_params();
    keys_.assign(config_.n_layer, {});
    values_.assign(config_.n_layer, {});
    pos_ = 0;
  }

  std::span<const double> next_logits(int token) override {
    check(token >= 0 && token < config_.vocab_size, "microgpt: token id ", token,
          " outside the vocabulary");
    check(pos_ < config_.block_size, "microgpt: sequence longer than block_size (",
          config_.block_size, ")");
    const Vec logits = gpt(token, pos_++);
    logits_.clear();
    for (NodeId l : logits) logits_.push_back(g_.data(l));
    return logits_;
  }

 private:
  void sync_params() {
    g_.truncate(n_params_);
    const std::span<const double> p = params_.flat();
    for (size_t i = 0; i < n_params_; ++i) {
      g_.set_data(static_cast<NodeId>(i), p[i]);
      g_.set_grad(static_cast<NodeId>(i), 0.0);
    }
  }

  NodeId param(size_t offset, int64_t row, int64_t cols, int64_t col) const {
    return static_cast<NodeId>(offset + row * cols + col);
  }

  // Python's sum(): starts from the int 0, so the first step is Value.__radd__(0).
  NodeId sum(const Vec& xs) {
    NodeId acc = g_.add(xs[0], 0.0);
    for (size_t i = 1; i < xs.size(); ++i) acc = g_.add(acc, xs[i]);
    return acc;
  }

  // [sum(wi * xi for wi, xi in zip(wo, x)) for wo in w]
  Vec linear(const Vec& x, size_t w, int64_t nout) {
    const int64_t nin = static_cast<int64_t>(x.size());
    Vec out(nout), terms(nin);
    for (int64_t o = 0; o < nout; ++o) {
      for (int64_t i = 0; i < nin; ++i) terms[i] = g_.mul(param(w, o, nin, i), x[i]);
      out[o] = sum(terms);
    }
    return out;
  }

  Vec softmax(const Vec& logits) {
    double max_val = g_.data(logits[0]);
    for (NodeId l : logits) max_val = std::max(max_val, g_.data(l));
    Vec exps;
    for (NodeId l : logits) exps.push_back(g_.exp(g_.add(l, -max_val)));  // val - max_val
    const NodeId total = sum(exps);
    Vec probs;
    for (NodeId e : exps) probs.push_back(g_.div(e, total));
    return probs;
  }

  Vec rmsnorm(const Vec& x) {
    Vec sq;
    for (NodeId xi : x) sq.push_back(g_.mul(xi, xi));
    // sum(...) / len(x): a Value divided by an int multiplies by float(len) ** -1
    const NodeId ms = g_.mul(sum(sq), py_pow(static_cast<double>(x.size()), -1.0));
    const NodeId scale = g_.pow(g_.add(ms, 1e-5), -0.5);
    Vec out;
    for (NodeId xi : x) out.push_back(g_.mul(xi, scale));
    return out;
  }

  Vec gpt(int token, int pos) {
    const Config& c = config_;
    const int64_t C = c.n_embd, hd = c.head_dim();
    Vec x(C);
    for (int64_t i = 0; i < C; ++i)
      x[i] = g_.add(param(at_.wte, token, C, i), param(at_.wpe, pos, C, i));
    x = rmsnorm(x);
    const double inv_sqrt_hd = py_pow(py_pow(static_cast<double>(hd), 0.5), -1.0);
    for (int li = 0; li < c.n_layer; ++li) {
      const LayerOffsets& L = at_.layers[li];
      // 1) multi-head attention
      Vec x_residual = x;
      x = rmsnorm(x);
      const Vec q = linear(x, L.wq, C);
      keys_[li].push_back(linear(x, L.wk, C));
      values_[li].push_back(linear(x, L.wv, C));
      Vec x_attn;
      const size_t n_ctx = keys_[li].size();
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t hs = h * hd;
        Vec attn_logits(n_ctx), terms(hd);
        for (size_t t = 0; t < n_ctx; ++t) {
          for (int64_t j = 0; j < hd; ++j) terms[j] = g_.mul(q[hs + j], keys_[li][t][hs + j]);
          attn_logits[t] = g_.mul(sum(terms), inv_sqrt_hd);
        }
        const Vec w = softmax(attn_logits);
        Vec wterms(n_ctx);
        for (int64_t j = 0; j < hd; ++j) {
          for (size_t t = 0; t < n_ctx; ++t) wterms[t] = g_.mul(w[t], values_[li][t][hs + j]);
          x_attn.push_back(sum(wterms));
        }
      }
      x = linear(x_attn, L.wo, C);
      for (int64_t i = 0; i < C; ++i) x[i] = g_.add(x[i], x_residual[i]);
      // 2) MLP
      x_residual = x;
      x = rmsnorm(x);
      x = linear(x, L.fc1, 4 * C);
      for (NodeId& xi : x) xi = g_.relu(xi);
      x = linear(x, L.fc2, C);
      for (int64_t i = 0; i < C; ++i) x[i] = g_.add(x[i], x_residual[i]);
    }
    return linear(x, at_.lm_head, c.vocab_size);
  }

  double run(std::span<const int> tokens, bool with_grad) {
    check_tokens(tokens);
    if (tokens.size() < 2) return 0.0;
    start_sequence();
    const size_t n = std::min<size_t>(config_.block_size, tokens.size() - 1);
    Vec losses;
    for (size_t p = 0; p < n; ++p) {
      const Vec probs = softmax(gpt(tokens[p], static_cast<int>(p)));
      losses.push_back(g_.neg(g_.log(probs[tokens[p + 1]])));
    }
    const NodeId loss = g_.mul(sum(losses), 1.0 / static_cast<double>(n));  // (1 / n) * sum
    const double value = g_.data(loss);
    if (with_grad) {
      g_.backward(loss);
      for (size_t i = 0; i < n_params_; ++i) grads_[i] += g_.grad(static_cast<NodeId>(i));
    }
    g_.truncate(n_params_);
    return value;
  }

  Graph g_;
  size_t n_params_ = 0;
  ParamIndex at_;                                // every tensor's offset, node i being parameter i
  std::vector<std::vector<Vec>> keys_, values_;  // per layer, per position
  std::vector<double> logits_;                   // next_logits()'s
  int pos_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_scalar_model(const Config& config) {
  return std::make_unique<ScalarModel>(config);
}

}  // namespace tinylm::microgpt
