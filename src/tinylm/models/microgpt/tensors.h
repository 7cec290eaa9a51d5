#pragma once
// microgpt's tensors, listed once (gemma.cpp's ForEachTensor is the model): for_each_tensor
// visits each tensor's name, shape and role together with its offset field in a ParamIndex.
// The parameter layout (microgpt.py's state_dict order, also the checkpoint's) and both
// engines' offsets read this one list.
#include <cstddef>
#include <string>
#include <vector>

#include "tinylm/core/param_store.h"
#include "tinylm/models/microgpt/config.h"

namespace tinylm::microgpt {

struct TensorSpec {
  std::string name;
  Shape shape;  // [out][in] for a matrix, row-major
  ParamRole role = ParamRole::matrix;
};

// Offsets of one layer's matrices, in the flat parameters (or in a copy laid out otherwise).
struct LayerOffsets {
  size_t wq = 0, wk = 0, wv = 0, wo = 0, fc1 = 0, fc2 = 0;
};

struct ParamIndex {
  size_t wte = 0, wpe = 0, lm_head = 0;
  std::vector<LayerOffsets> layers;
};

// visit(const TensorSpec&, size_t& offset_field) for every tensor in the canonical order;
// index.layers is sized to n_layer first.
template <class Visit>
void for_each_tensor(const Config& c, ParamIndex& index, Visit&& visit) {
  const int64_t C = c.n_embd, F = c.mlp_dim();
  visit(TensorSpec{"wte", {c.vocab_size, C}, ParamRole::embedding}, index.wte);
  visit(TensorSpec{"wpe", {c.block_size, C}, ParamRole::embedding}, index.wpe);
  visit(TensorSpec{"lm_head", {c.vocab_size, C}}, index.lm_head);
  index.layers.resize(static_cast<size_t>(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    LayerOffsets& o = index.layers[static_cast<size_t>(i)];
    const std::string p = "layer" + std::to_string(i) + ".";
    visit(TensorSpec{p + "attn_wq", {C, C}}, o.wq);
    visit(TensorSpec{p + "attn_wk", {C, C}}, o.wk);
    visit(TensorSpec{p + "attn_wv", {C, C}}, o.wv);
    visit(TensorSpec{p + "attn_wo", {C, C}}, o.wo);
    visit(TensorSpec{p + "mlp_fc1", {F, C}}, o.fc1);
    visit(TensorSpec{p + "mlp_fc2", {C, F}}, o.fc2);
  }
}

// Every tensor's offset into the flat parameters (param_layout's).
ParamIndex param_offsets(const Config& config);

}  // namespace tinylm::microgpt
