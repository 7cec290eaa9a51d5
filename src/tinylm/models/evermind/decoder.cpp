#include "tinylm/models/evermind/decoder.h"

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/kernels/embedding/embedding.h"
#include "tinylm/kernels/mixer/causal_conv.h"
#include "tinylm/kernels/norm/rmsnorm_gain.h"

namespace tinylm::evermind {

namespace k = tinylm::kernels;

template <class T>
Decoder<T>::Decoder(const Model<T>& model)
    : model_(&model),
      d_(model.config()),
      packed_(model.layout()),
      history_(static_cast<size_t>(d_.L * (d_.K - 1) * d_.D)),
      x_(static_cast<size_t>(d_.D)),
      x_next_(static_cast<size_t>(d_.D)),
      logits_(static_cast<size_t>(d_.V)),
      tap_rows_(static_cast<size_t>(d_.K)) {
  size_t bytes = 0;
  make_layer_acts<T>(
      d_, 1,
      [&](int64_t n) {
        bytes += Arena::footprint<T>(static_cast<size_t>(n));
        return static_cast<T*>(nullptr);
      },
      [&](int64_t n) {
        bytes += Arena::footprint<int32_t>(static_cast<size_t>(n));
        return static_cast<int32_t*>(nullptr);
      });
  arena_ = Arena(bytes);
  acts_ = make_layer_acts<T>(
      d_, 1, [&](int64_t n) { return arena_.alloc<T>(static_cast<size_t>(n)).data(); },
      [&](int64_t n) { return arena_.alloc<int32_t>(static_cast<size_t>(n)).data(); });
  reset();
}

template <class T>
void Decoder<T>::reset() {
  packed_.pack(model_->layout(), model_->params());
  std::fill(history_.begin(), history_.end(), T(0));
  pos_ = 0;
}

template <class T>
std::span<const T> Decoder<T>::step(int token) {
  check(token >= 0 && token < d_.V, "evermind decoder: token ", token,
        " is outside the vocabulary [0, ", d_.V, ")");
  const T* p = model_->params().data();
  const T* w = packed_.data();
  const ParamIndex& idx = model_->index();
  const int64_t D = d_.D, hist_len = d_.K - 1;
  k::embedding_forward(x_.data(), &token, p + idx.emb, static_cast<const T*>(nullptr), 1, D);
  const int64_t taps = std::min(pos_ + 1, d_.K);
  std::vector<const T*>& rows = tap_rows_;
  for (int64_t l = 0; l < d_.L; ++l) {
    const LayerIndex& li = idx.layers[static_cast<size_t>(l)];
    T* hist = history_.data() + l * hist_len * D;
    k::rmsnorm_gain_forward(acts_.na, acts_.rstd_a, x_.data(), p + li.conv_norm, 1, D,
                            static_cast<T>(kNormEps));
    rows[0] = acts_.na;
    for (int64_t j = 1; j < taps; ++j)
      rows[static_cast<size_t>(j)] = hist + ((pos_ - j) % hist_len) * D;
    k::causal_conv_step(acts_.x_mid, rows.data(), taps, w + li.conv, D);
    for (int64_t i = 0; i < D; ++i) acts_.x_mid[i] += x_[static_cast<size_t>(i)];
    if (hist_len > 0) std::copy(acts_.na, acts_.na + D, hist + (pos_ % hist_len) * D);
    channel_forward(d_, li, p, w, acts_, 1, x_next_.data());
    std::swap(x_, x_next_);
  }
  k::tied_logits_forward(logits_.data(), x_.data(), w + idx.emb, 1, D, d_.V);
  ++pos_;
  return logits_;
}

template class Decoder<float>;
template class Decoder<double>;

}  // namespace tinylm::evermind
