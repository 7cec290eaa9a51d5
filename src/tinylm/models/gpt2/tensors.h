#pragma once
// GPT-2's tensors, listed once (gemma.cpp's ForEachTensor is the model): for_each_tensor visits
// each tensor's names, shape and role together with the field of a Tensors<Small, Matrix> that
// holds it. The parameter layout and its offsets (the trainer's), the decoding storages'
// binding, the GGUF name map, the initialisation and the quantizers all read this one list.
#include <string>
#include <type_traits>
#include <vector>

#include "tinylm/core/param_store.h"
#include "tinylm/models/gpt2/config.h"

namespace tinylm::gpt2 {

struct TensorSpec {
  std::string name;  // Hugging Face's, without the "transformer." prefix
  std::string gguf;  // llama.cpp's
  Shape shape;       // as Hugging Face stores it: a Conv1D weight is [in, out]
  ParamRole role;
  // A Conv1D weight: [in, out] in Hugging Face files and the flat parameters, [out, in] in GGUF
  // files and quantized blocks.
  bool conv1d = false;
  // Held in a storage's matrix type (wte and the Conv1D weights); the rest stays f32.
  bool matrix = false;
  // A projection into the residual stream (GPT-2 initialises it with 0.02 / sqrt(2 n_layer)).
  bool residual = false;
};

// The tag for_each_tensor passes with a field of the Matrix type, or of the Small type.
using MatrixTensor = std::true_type;
using SmallTensor = std::false_type;

template <class Small, class Matrix>
struct Block {
  Small ln1_w, ln1_b;
  Matrix attn_w;
  Small attn_b;
  Matrix proj_w;
  Small proj_b;
  Small ln2_w, ln2_b;
  Matrix fc_w;
  Small fc_b;
  Matrix fc_proj_w;
  Small fc_proj_b;
};

// One value per tensor: a storage's pointers, or offsets into the flat parameters.
template <class Small, class Matrix>
struct Tensors {
  Matrix wte{};
  Small wpe{};
  std::vector<Block<Small, Matrix>> layers;
  Small lnf_w{}, lnf_b{};
};

// visit(const TensorSpec&, field, MatrixTensor{} or SmallTensor{}) for every tensor in Hugging
// Face order (param_layout's); t.layers is sized to n_layer first.
template <class Small, class Matrix, class Visit>
void for_each_tensor(const Config& c, Tensors<Small, Matrix>& t, Visit&& visit) {
  using R = ParamRole;
  const int64_t C = c.n_embd, F = c.mlp_dim();
  const MatrixTensor matrix;
  const SmallTensor small;
  visit(TensorSpec{"wte.weight", "token_embd.weight", {c.vocab_size, C}, R::embedding, false, true},
        t.wte, matrix);
  visit(TensorSpec{"wpe.weight", "position_embd.weight", {c.n_positions, C}, R::embedding}, t.wpe,
        small);
  t.layers.resize(static_cast<size_t>(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    Block<Small, Matrix>& b = t.layers[static_cast<size_t>(i)];
    const std::string h = "h." + std::to_string(i) + ".", g = "blk." + std::to_string(i) + ".";
    const auto spec = [&](const char* hf, const char* gguf, Shape shape, R role) {
      const bool conv1d = role == R::matrix;
      return TensorSpec{h + hf, g + gguf, std::move(shape), role, conv1d, conv1d, false};
    };
    const auto residual = [](TensorSpec s) {
      s.residual = true;
      return s;
    };
    visit(spec("ln_1.weight", "attn_norm.weight", {C}, R::norm), b.ln1_w, small);
    visit(spec("ln_1.bias", "attn_norm.bias", {C}, R::bias), b.ln1_b, small);
    visit(spec("attn.c_attn.weight", "attn_qkv.weight", {C, 3 * C}, R::matrix), b.attn_w, matrix);
    visit(spec("attn.c_attn.bias", "attn_qkv.bias", {3 * C}, R::bias), b.attn_b, small);
    visit(residual(spec("attn.c_proj.weight", "attn_output.weight", {C, C}, R::matrix)), b.proj_w,
          matrix);
    visit(spec("attn.c_proj.bias", "attn_output.bias", {C}, R::bias), b.proj_b, small);
    visit(spec("ln_2.weight", "ffn_norm.weight", {C}, R::norm), b.ln2_w, small);
    visit(spec("ln_2.bias", "ffn_norm.bias", {C}, R::bias), b.ln2_b, small);
    visit(spec("mlp.c_fc.weight", "ffn_up.weight", {C, F}, R::matrix), b.fc_w, matrix);
    visit(spec("mlp.c_fc.bias", "ffn_up.bias", {F}, R::bias), b.fc_b, small);
    visit(residual(spec("mlp.c_proj.weight", "ffn_down.weight", {F, C}, R::matrix)), b.fc_proj_w,
          matrix);
    visit(spec("mlp.c_proj.bias", "ffn_down.bias", {C}, R::bias), b.fc_proj_b, small);
  }
  visit(TensorSpec{"ln_f.weight", "output_norm.weight", {C}, R::norm}, t.lnf_w, small);
  visit(TensorSpec{"ln_f.bias", "output_norm.bias", {C}, R::bias}, t.lnf_b, small);
}

// The list alone, in the same order (index i describes param_layout(config).entries()[i]).
std::vector<TensorSpec> tensor_specs(const Config& config);

// Every tensor's offset, in elements, into the flat parameters (param_layout's, with its
// alignment).
using Offsets = Tensors<size_t, size_t>;
Offsets param_offsets(const Config& config, size_t align = 1);

}  // namespace tinylm::gpt2
