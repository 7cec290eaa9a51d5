#include "tinylm/models/evermind/model.h"

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/loss/cross_entropy.h"
#include "tinylm/models/evermind/init.h"

namespace tinylm::evermind {

namespace k = tinylm::kernels;

template <class T>
Workspace<T>::Workspace(const Config& config, int64_t max_seq_len, bool checkpoint_activations)
    : max_seq_len_(max_seq_len), checkpoint_(checkpoint_activations) {
  validate(config);
  check(max_seq_len >= 1, "evermind: max_seq_len must be positive (got ", max_seq_len, ")");
  const Dims d(config);
  const int64_t R = max_seq_len;
  const size_t sets = checkpoint_activations ? 1 : static_cast<size_t>(d.L);
  // Plan with the same calls that carve the arena: first count, then allocate.
  size_t bytes = 0;
  const auto count_real = [&](int64_t n) {
    bytes += Arena::footprint<T>(static_cast<size_t>(n));
    return static_cast<T*>(nullptr);
  };
  const auto count_int = [&](int64_t n) {
    bytes += Arena::footprint<int32_t>(static_cast<size_t>(n));
    return static_cast<int32_t*>(nullptr);
  };
  for (int64_t l = 0; l <= d.L; ++l) count_real(R * d.D);
  for (size_t s = 0; s < sets; ++s) make_layer_acts<T>(d, R, count_real, count_int);
  make_layer_scratch<T>(d, R, count_real);
  count_real(R * d.V);
  count_real(R);
  count_real(R * d.D);

  arena_ = Arena(bytes);
  const auto alloc_real = [&](int64_t n) { return arena_.alloc<T>(static_cast<size_t>(n)).data(); };
  const auto alloc_int = [&](int64_t n) {
    return arena_.alloc<int32_t>(static_cast<size_t>(n)).data();
  };
  for (int64_t l = 0; l <= d.L; ++l) x_.push_back(alloc_real(R * d.D));
  for (size_t s = 0; s < sets; ++s)
    acts_.push_back(make_layer_acts<T>(d, R, alloc_real, alloc_int));
  scratch_ = make_layer_scratch<T>(d, R, alloc_real);
  logits_ = alloc_real(R * d.V);
  norm_ = alloc_real(R);
  dx_ = alloc_real(R * d.D);
}

template <class T>
Model<T>::Model(const Config& config, int64_t max_seq_len) : Model(config, max_seq_len, Unset{}) {
  init(config.seed);
}

template <class T>
Model<T>::Model(const Config& config, int64_t max_seq_len, std::span<const T> params)
    : Model(config, max_seq_len, Unset{}) {
  check(params.size() == params_.size(), "evermind: ", params.size(),
        " parameters given, the configuration has ", params_.size());
  std::copy(params.begin(), params.end(), params_.begin());
  pack();
}

template <class T>
Model<T>::Model(const Config& config, int64_t max_seq_len, Unset)
    : config_(config),
      layout_(param_layout(config)),  // validates
      index_(config),
      dims_(config),
      max_seq_len_(max_seq_len),
      params_(layout_.size()),
      grads_(layout_.size(), T(0)),
      packed_(layout_) {
  check(max_seq_len >= 1, "evermind: max_seq_len must be positive (got ", max_seq_len, ")");
}

template <class T>
void Model<T>::zero_grads() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template <class T>
void Model<T>::init(uint64_t seed) {
  init_params<T>(config_, seed, params_);
  pack();
}

template <class T>
void Model<T>::pack() {
  packed_.pack(layout_, params_);
}

template <class T>
Workspace<T>& Model<T>::own_workspace(bool checkpoint) {
  std::unique_ptr<Workspace<T>>& ws = checkpoint ? checkpoint_ws_ : plain_ws_;
  if (!ws) ws = std::make_unique<Workspace<T>>(config_, max_seq_len_, checkpoint);
  return *ws;
}

template <class T>
void Model<T>::check_tokens(std::span<const int> tokens, int64_t capacity) const {
  check(static_cast<int64_t>(tokens.size()) <= capacity, "evermind: sequence of ", tokens.size(),
        " tokens exceeds the planned max_seq_len ", capacity);
  for (size_t i = 0; i < tokens.size(); ++i) {
    check(tokens[i] >= 0 && tokens[i] < config_.vocab_size, "evermind: token ", tokens[i],
          " at position ", i, " is outside the vocabulary [0, ", config_.vocab_size, ")");
  }
}

template <class T>
double Model<T>::forward_layers(Workspace<T>& ws, std::span<const int> tokens) const {
  const Dims& d = dims_;
  const int64_t rows = static_cast<int64_t>(tokens.size());
  const T* p = params_.data();
  const T* w = packed_.data();
  k::embedding_forward(ws.x_[0], tokens.data(), p + index_.emb, static_cast<const T*>(nullptr),
                       rows, d.D);
  double aux = 0.0;
  for (int64_t l = 0; l < d.L; ++l) {
    LayerActs<T>& a = ws.acts_[ws.checkpoint_ ? 0 : static_cast<size_t>(l)];
    const LayerIndex& li = index_.layers[static_cast<size_t>(l)];
    mixer_forward(d, li, p, w, a, ws.x_[static_cast<size_t>(l)], rows);
    channel_forward(d, li, p, w, a, rows, ws.x_[static_cast<size_t>(l) + 1]);
    aux += a.aux;
  }
  return aux;
}

template <class T>
Loss Model<T>::loss(Workspace<T>& ws, std::span<const int> tokens, double aux_loss_coef) const {
  check_tokens(tokens, ws.max_seq_len());
  const int64_t T_ = static_cast<int64_t>(tokens.size());
  if (T_ < 2) return {};
  const Dims& d = dims_;
  const double aux = forward_layers(ws, tokens);
  const int64_t rows = T_ - 1;
  k::tied_logits_forward(ws.logits_, ws.x_[static_cast<size_t>(d.L)], packed_.data() + index_.emb,
                         rows, d.D, d.V);
  const double ce = k::cross_entropy_forward_inplace(static_cast<T*>(nullptr), ws.norm_, ws.logits_,
                                                     tokens.data() + 1, rows, d.V) /
                    static_cast<double>(rows);
  return {ce + aux_loss_coef * aux, ce, aux, rows};
}

template <class T>
Loss Model<T>::forward_backward(Workspace<T>& ws, std::span<const int> tokens, std::span<T> grads,
                                const PassOptions& options) const {
  check(grads.size() == params_.size(), "evermind: gradient buffer holds ", grads.size(),
        " values, expected ", params_.size());
  check(options.checkpoint_activations == ws.checkpoint_activations(),
        "evermind: workspace planned ", ws.checkpoint_activations() ? "with" : "without",
        " activation checkpointing, pass asks the opposite");
  const Loss result = loss(ws, tokens, options.aux_loss_coef);
  if (result.positions == 0) return result;
  const Dims& d = dims_;
  const int64_t T_ = static_cast<int64_t>(tokens.size()), rows = T_ - 1;
  const T* p = params_.data();
  const T* w = packed_.data();
  T* g = grads.data();

  k::cross_entropy_backward_exp(ws.logits_, ws.logits_, ws.norm_, tokens.data() + 1, rows, d.V,
                                static_cast<T>(options.loss_grad / static_cast<double>(rows)));
  k::tied_logits_backward(ws.dx_, g + index_.emb, ws.logits_, ws.x_[static_cast<size_t>(d.L)],
                          p + index_.emb, rows, d.D, d.V);
  std::fill(ws.dx_ + rows * d.D, ws.dx_ + T_ * d.D, T(0));  // the last position predicts nothing

  const double aux_scale = options.aux_loss_coef * options.loss_grad;
  for (int64_t l = d.L - 1; l >= 0; --l) {
    const LayerIndex& li = index_.layers[static_cast<size_t>(l)];
    const T* x_in = ws.x_[static_cast<size_t>(l)];
    LayerActs<T>& a = ws.acts_[ws.checkpoint_ ? 0 : static_cast<size_t>(l)];
    if (ws.checkpoint_ && l != d.L - 1) {
      // Recompute this layer from its saved input (the last layer's activations are still
      // there from the forward). Same code, same inputs: the same bits as the plain path.
      mixer_forward(d, li, p, w, a, x_in, T_);
      channel_forward(d, li, p, w, a, T_, ws.x_[static_cast<size_t>(l) + 1]);
    }
    layer_backward(d, li, p, w, a, x_in, T_, ws.dx_, g, ws.scratch_, aux_scale);
  }
  k::embedding_backward(g + index_.emb, static_cast<T*>(nullptr), ws.dx_, tokens.data(), T_, d.D);
  return result;
}

template <class T>
Loss Model<T>::forward_backward(std::span<const int> tokens, const PassOptions& options) {
  pack();
  return forward_backward(own_workspace(options.checkpoint_activations), tokens, grads_, options);
}

template <class T>
Loss Model<T>::loss(std::span<const int> tokens, double aux_loss_coef) {
  pack();
  return loss(own_workspace(false), tokens, aux_loss_coef);
}

template <class T>
void Model<T>::logits(std::span<const int> tokens, std::span<T> out) {
  const int64_t T_ = static_cast<int64_t>(tokens.size());
  check(out.size() == static_cast<size_t>(T_ * dims_.V), "evermind: logits buffer holds ",
        out.size(), " values, expected ", T_, " × ", dims_.V);
  Workspace<T>& ws = own_workspace(false);
  check_tokens(tokens, ws.max_seq_len());
  if (T_ == 0) return;
  pack();
  forward_layers(ws, tokens);
  k::tied_logits_forward(out.data(), ws.x_[static_cast<size_t>(dims_.L)],
                         packed_.data() + index_.emb, T_, dims_.D, dims_.V);
}

template class Workspace<float>;
template class Workspace<double>;
template class Model<float>;
template class Model<double>;

}  // namespace tinylm::evermind
