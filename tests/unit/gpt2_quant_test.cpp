// GPT-2 with q8_0 / q4_0 weights: the same logits as an f32 model over the dequantized
// weights (within f32 rounding: the f32 model sums in another order), decode = prefill and the
// same bits at every level and thread count, in-place views equal to quantizing at load, and
// clear errors for shapes and tensors that cannot be used.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "gpt2_tiny.h"
#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/kernels/quant/blocks.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

using test_tiny::all_logits;
using test_tiny::kTokens;
checkpoints::Gpt2Checkpoint tiny() { return test_tiny::checkpoint(); }

bool is_matrix(const ParamEntry& e) { return e.shape.size() == 2 && e.name != "wpe.weight"; }

// A matrix in ggml's layout (Conv1D weights transposed), quantized as `t`.
std::vector<uint8_t> ggml_blocks(const ParamEntry& e, const float* src, DType t) {
  const int64_t rows = e.shape[0], cols = e.shape[1];
  std::vector<float> m(src, src + rows * cols);
  if (e.name != "wte.weight") {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t o = 0; o < cols; ++o) m[o * rows + i] = src[i * cols + o];
    }
  }
  std::vector<uint8_t> q(storage_bytes(t, rows * cols));
  kernels::quantize(t, m.data(), q.data(), rows * cols);
  return q;
}

// The parameters an f32 model needs to compute what a quantized model of `t` does: every
// matrix quantized in ggml's layout and dequantized back.
std::vector<float> dequantized_params(const Config& c, const std::vector<float>& params, DType t) {
  std::vector<float> out = params;
  const ParamLayout L = param_layout(c);
  for (const ParamEntry& e : L.entries()) {
    if (!is_matrix(e)) continue;
    const DType mt = e.name == "wte.weight" ? quant_embedding_dtype(t) : t;
    const std::vector<uint8_t> q = ggml_blocks(e, params.data() + e.offset, mt);
    const int64_t rows = e.shape[0], cols = e.shape[1];
    std::vector<float> m(static_cast<size_t>(rows * cols));
    kernels::dequantize(mt, q.data(), m.data(), rows * cols);
    float* dst = out.data() + e.offset;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t o = 0; o < cols; ++o)
        dst[i * cols + o] = e.name == "wte.weight" ? m[i * cols + o] : m[o * rows + i];
    }
  }
  return out;
}

// Weights and activations (Model::set_activations).
const std::pair<DType, DType> kTypes[] = {{DType::q8_0, DType::f32},
                                          {DType::q4_0, DType::f32},
                                          {DType::q8_0, DType::q8_0},
                                          {DType::q4_0, DType::q8_0}};

TEST(Gpt2Quant, LogitsEqualAnF32ModelOverTheDequantizedWeights) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  for (DType t : {DType::q8_0, DType::q4_0}) {
    Model q(ck.config, ck.params, t);
    Model f(ck.config, dequantized_params(ck.config, ck.params, t), DType::f32);
    const std::vector<float> a = all_logits(q, kTokens), b = all_logits(f, kTokens);
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, double(std::abs(a[i] - b[i])) / (1 + std::abs(b[i])));
    // f32 rounding of two summation orders through two layers: ~1e-6.
    EXPECT_LT(worst, 1e-5) << dtype_name(t);
    // And the quantization is real: the f32 model of the original weights differs.
    Model orig(ck.config, ck.params, DType::f32);
    const std::vector<float> c = all_logits(orig, kTokens);
    EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * 4), 0) << dtype_name(t);
  }
}

TEST(Gpt2Quant, DecodeEqualsPrefillAtEveryLevelAndThreadCount) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  for (const auto& types : kTypes) {
    const DType t = types.first, act = types.second;
    Model m(ck.config, ck.params, t);
    m.set_activations(act);
    const std::vector<float> want = test::expect_same_at_every_level(
        [&] { return all_logits(m, kTokens); }, std::string(dtype_name(t)) + " prefill");
    test::for_each_isa([&](kernels::Isa) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + ", threads " + std::to_string(threads));
        set_num_threads(threads);
        test_tiny::expect_decode_equals(m, want);
      }
    });
    set_num_threads(0);
  }
}

// 8-bit activations (kernels/quant/int_matmul.h, whose bits its own test checks) change the
// logits by the activations' rounding only: close to the f32-activation model's, not equal.
TEST(Gpt2Quant, Q8_0ActivationsStayCloseToF32Activations) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  for (DType t : {DType::q8_0, DType::q4_0}) {
    Model m(ck.config, ck.params, t);
    EXPECT_EQ(m.activations(), DType::f32);
    const std::vector<float> a = all_logits(m, kTokens);
    m.set_activations(DType::q8_0);
    EXPECT_EQ(m.activations(), DType::q8_0);
    const std::vector<float> b = all_logits(m, kTokens);
    const test_tiny::Change c = test_tiny::change(a, b);
    EXPECT_GT(c.worst, 0) << dtype_name(t);
    EXPECT_LT(c.worst, 0.02 * c.spread) << dtype_name(t);
    m.set_activations(DType::f32);
    EXPECT_EQ(std::memcmp(all_logits(m, kTokens).data(), a.data(), a.size() * 4), 0);
  }
  Model bf(ck.config, ck.params, DType::bf16);
  test::expect_error([&] { bf.set_activations(DType::q8_0); }, {"q8_0 or q4_0 model", "bf16"});
  Model q(ck.config, ck.params, DType::q4_0);
  test::expect_error([&] { q.set_activations(DType::f16); }, {"f16", "f32, q8_0 or bf16"});
}

// Continuous batching over quantized weights: sequences at different positions stepped
// together by forward_batch get the bits of each stepping alone (the full sequence's rows).
TEST(Gpt2Quant, BatchedDecodingEqualsEachSequenceAlone) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  for (const auto& types : kTypes) {
    const DType t = types.first, act = types.second;
    SCOPED_TRACE(dtype_name(t));
    Model m(ck.config, ck.params, t);
    m.set_activations(act);
    const std::vector<float> want = all_logits(m, kTokens);
    test::for_each_isa([&](kernels::Isa) { test_tiny::expect_batch_equals(m, want); });
  }
}

// The GGUF path: blocks in ggml's layout handed over in place compute what quantizing the
// same floats at load computes.
TEST(Gpt2Quant, InPlaceViewsEqualQuantizingAtLoad) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const ParamLayout L = param_layout(ck.config);
  for (DType t : {DType::q8_0, DType::q4_0}) {
    auto storage = std::make_shared<std::map<std::string, std::vector<uint8_t>>>();
    for (const ParamEntry& e : L.entries()) {
      if (is_matrix(e)) {
        const DType mt = e.name == "wte.weight" ? quant_embedding_dtype(t) : t;
        (*storage)[e.name] = ggml_blocks(e, ck.params.data() + e.offset, mt);
      }
    }
    const auto tensor = [&](const std::string& name) -> Model::TensorView {
      const ParamEntry& e = L.at(name);
      if (is_matrix(e)) {
        const DType mt = name == "wte.weight" ? quant_embedding_dtype(t) : t;
        return {mt, storage->at(name).data(), storage->at(name).size()};
      }
      return {DType::f32, ck.params.data() + e.offset, e.numel * sizeof(float)};
    };
    Model views = Model::from_quant_views(ck.config, t, tensor, storage);
    Model loaded(ck.config, ck.params, t);
    EXPECT_EQ(views.dtype(), t);
    EXPECT_EQ(views.weight_bytes(), loaded.weight_bytes());
    const std::vector<float> a = all_logits(views, kTokens), b = all_logits(loaded, kTokens);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << dtype_name(t);
  }
}

TEST(Gpt2Quant, WeightBytesCountBlocks) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const Config& c = ck.config;
  size_t matrices = 0, small = 0;
  const ParamLayout L = param_layout(c);
  for (const ParamEntry& e : L.entries())
    (is_matrix(e) && e.name != "wte.weight" ? matrices : small) += e.numel;
  const size_t wte = static_cast<size_t>(c.vocab_size) * c.n_embd;
  small -= wte;
  EXPECT_EQ(Model(c, ck.params, DType::q8_0).weight_bytes(),
            matrices / 32 * 34 + wte / 32 * 34 + small * 4);
  EXPECT_EQ(Model(c, ck.params, DType::q4_0).weight_bytes(),
            matrices / 32 * 18 + wte / 32 * 34 + small * 4);
}

TEST(Gpt2Quant, UntiedHeadIsQuantizedToo) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const Config& c = ck.config;
  std::vector<float> head = test::random_uniform(static_cast<size_t>(c.vocab_size) * c.n_embd, 9);
  Model q(c, ck.params, DType::q8_0, head);
  // The f32 model over dequantized weights and head.
  std::vector<uint8_t> qh(storage_bytes(DType::q8_0, static_cast<int64_t>(head.size())));
  std::vector<float> dh(head.size());
  kernels::quantize(DType::q8_0, head.data(), qh.data(), static_cast<int64_t>(head.size()));
  kernels::dequantize(DType::q8_0, qh.data(), dh.data(), static_cast<int64_t>(head.size()));
  Model f(c, dequantized_params(c, ck.params, DType::q8_0), DType::f32, dh);
  const std::vector<float> a = all_logits(q, kTokens), b = all_logits(f, kTokens);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i])));
}

TEST(Gpt2Quant, ErrorsForShapesAndTensorsThatCannotBeUsed) {
  Config c;
  c.vocab_size = 40;
  c.n_positions = 8;
  c.n_embd = 48;  // not a multiple of 32
  c.n_layer = 1;
  c.n_head = 2;
  const std::vector<float> params(param_layout(c).size(), 0.01f);
  test::expect_error([&] { Model(c, params, DType::q8_0); }, {"q8_0", "n_embd (48)", "32"});
  c.n_embd = 32;
  c.n_inner = 40;  // the MLP width
  test::expect_error([&] { Model(c, std::vector<float>(param_layout(c).size()), DType::q4_0); },
                     {"MLP width (40)"});
  c.n_inner = 0;
  const ParamLayout L = param_layout(c);
  std::vector<float> p(L.size(), 0.01f);
  std::vector<uint8_t> blocks(1 << 16);
  const auto views = [&](const std::string& bad, Model::TensorView v) {
    return [&, bad, v](const std::string& name) -> Model::TensorView {
      if (name == bad) return v;
      const ParamEntry& e = L.at(name);
      if (is_matrix(e)) return {DType::q8_0, blocks.data(), e.numel / 32 * 34};
      return {DType::f32, p.data() + e.offset, e.numel * sizeof(float)};
    };
  };
  const auto build = [&](const std::string& bad, Model::TensorView v) {
    (void)Model::from_quant_views(c, DType::q8_0, views(bad, v), nullptr);
  };
  const size_t fc_bytes = L.at("h.0.mlp.c_fc.weight").numel / 32 * 34;
  EXPECT_NO_THROW(build("h.0.mlp.c_fc.weight", {DType::q8_0, blocks.data(), fc_bytes}));
  test::expect_error(
      [&] {
        build("h.0.mlp.c_fc.weight", {DType::f16, blocks.data(), fc_bytes});
      },
      {"h.0.mlp.c_fc.weight", "f16", "expected a block type"});
  // Matrices may mix block types (llama.cpp's k-quant files), if their blocks fit the inputs.
  EXPECT_NO_THROW(build("h.0.mlp.c_fc.weight", {DType::q4_0, blocks.data(), fc_bytes / 34 * 18}));
  test::expect_error(
      [&] {
        build("h.0.mlp.c_fc.weight", {DType::q4_k, blocks.data(), 0});
      },
      {"h.0.mlp.c_fc.weight", "q4_k", "blocks of 256 do not divide its 32 inputs"});
  test::expect_error(
      [&] {
        build("h.0.mlp.c_fc.weight", {DType::q8_0, blocks.data(), fc_bytes - 34});
      },
      {"h.0.mlp.c_fc.weight", std::to_string(fc_bytes - 34) + " bytes given",
       std::to_string(fc_bytes)});
  test::expect_error(
      [&] {
        build("h.0.ln_2.weight", {DType::f32, p.data(), 4});
      },
      {"h.0.ln_2.weight", "4 bytes given", "128"});
  test::expect_error(
      [&] {
        build("h.0.ln_1.bias", {DType::q8_0, blocks.data(), 34});
      },
      {"h.0.ln_1.bias", "expected f32"});
  test::expect_error(
      [&] {
        build("wte.weight", {DType::f16, blocks.data(), 2560});
      },
      {"wte.weight", "f16"});
  test::expect_error(
      [&] {
        build("wpe.weight", {DType::f32, nullptr, 0});
      },
      {"wpe.weight", "no data"});
  const auto* odd = reinterpret_cast<const std::byte*>(p.data()) + 1;
  test::expect_error(
      [&] {
        build("ln_f.weight", {DType::f32, odd, 128});
      },
      {"ln_f.weight", "aligned"});
  test::expect_error([&] { (void)Model::from_quant_views(c, DType::bf16, views("", {}), nullptr); },
                     {"bf16", "not a quantized type"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
