#pragma once
// EvermindLM's tensors, listed once (gemma.cpp's ForEachTensor is the model): for_each_tensor
// visits each tensor's name, shape, role and initialisation together with its offset field in a
// ParamIndex. The parameter layout (also the EVL0 checkpoint order), the offsets the layers read
// and the initial weights all read this one list.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/core/param_store.h"
#include "tinylm/models/evermind/config.h"

namespace tinylm::evermind {

// How init_params fills a tensor (init.h states the values).
enum class Init : uint8_t { normal, ones, first_tap };

struct TensorSpec {
  std::string name;
  Shape shape;  // [rows, cols], row-major
  ParamRole role = ParamRole::matrix;
  Init init = Init::normal;
  int64_t layer = -1;   // the block it belongs to (-1: emb)
  uint32_t stream = 0;  // Init::normal's Philox stream within the tensor's key
};

struct LayerIndex {
  size_t conv = 0, conv_norm = 0, moe_norm = 0, router = 0, shared_up = 0, shared_down = 0;
  std::vector<size_t> expert_up, expert_down;
};

// Element offsets of every tensor in param_layout(config) order.
struct ParamIndex {
  size_t emb = 0;
  std::vector<LayerIndex> layers;
  ParamIndex() = default;
  explicit ParamIndex(const Config& config);
};

// visit(const TensorSpec&, size_t& offset_field) for every tensor in the canonical order
// (config.h's param_layout); index.layers (and their experts) are sized first.
template <class Visit>
void for_each_tensor(const Config& c, ParamIndex& index, Visit&& visit) {
  const int64_t D = c.d_model, H = c.hidden_dim;
  visit(TensorSpec{"emb", {c.vocab_size, D}, ParamRole::embedding}, index.emb);
  index.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerIndex& li = index.layers[static_cast<size_t>(l)];
    li.expert_up.resize(static_cast<size_t>(c.n_experts));
    li.expert_down.resize(static_cast<size_t>(c.n_experts));
    const std::string p = cat("layers.", l, ".");
    const auto spec = [&](std::string name, Shape shape, uint32_t stream) {
      return TensorSpec{p + name, std::move(shape), ParamRole::matrix, Init::normal, l, stream};
    };
    visit(TensorSpec{p + "conv", {D, c.conv_kernel}, ParamRole::matrix, Init::first_tap, l},
          li.conv);
    visit(TensorSpec{p + "conv_norm", {D}, ParamRole::norm, Init::ones, l}, li.conv_norm);
    visit(TensorSpec{p + "moe_norm", {D}, ParamRole::norm, Init::ones, l}, li.moe_norm);
    visit(spec("router", {c.n_experts, D}, 0), li.router);
    visit(spec("shared.up", {H, D}, 1), li.shared_up);
    visit(spec("shared.down", {D, H}, 2), li.shared_down);
    for (int64_t e = 0; e < c.n_experts; ++e) {
      const auto stream = [&](int64_t k) { return static_cast<uint32_t>(k + 2 * e); };
      visit(spec(cat("experts.", e, ".up"), {H, D}, stream(3)),
            li.expert_up[static_cast<size_t>(e)]);
      visit(spec(cat("experts.", e, ".down"), {D, H}, stream(4)),
            li.expert_down[static_cast<size_t>(e)]);
    }
  }
}

}  // namespace tinylm::evermind
