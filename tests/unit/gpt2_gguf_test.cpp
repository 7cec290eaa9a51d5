// GPT-2 in GGUF against files written by tools/gguf_reference.py (its own GGUF writer and
// numpy Q8_0/Q4_0 quantizers) from the tiny safetensors fixture: they load, the f32 file gives
// the safetensors model's logits bit for bit, tinylm writes the same bytes, and HF -> GGUF ->
// HF gives the same tensors back.
#include "tinylm/checkpoints/gpt2_gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tinylm/checkpoints/gguf_quant.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/dtype.h"
#include "tinylm/io/gguf.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

const std::string kTiny = "tests/fixtures/gpt2/tiny";
const std::string kGguf = "tests/fixtures/gguf";

std::string gguf(const std::string& type) {
  return test::source_path(kGguf + "/tiny_" + type + ".gguf");
}
checkpoints::Gpt2Checkpoint tiny() { return checkpoints::load_gpt2(test::source_path(kTiny)); }
BpeTokenizer tiny_tokenizer() {
  return BpeTokenizer::from_directory(test::source_path(kGguf + "/tokenizer"));
}
std::vector<int> fixture_tokens() {
  const auto j =
      nlohmann::json::parse(test::read_text(test::source_path(kTiny + "/expected.json")));
  return j["tokens"].get<std::vector<int>>();
}

std::vector<float> logits(gpt2::Model& m, const std::vector<int>& tokens) {
  gpt2::KvCache cache = m.new_cache(static_cast<int>(tokens.size()));
  std::vector<float> out(tokens.size() * static_cast<size_t>(m.config().vocab_size));
  m.forward(tokens, cache, out, /*all_logits=*/true);
  return out;
}

std::vector<std::byte> file_bytes(const std::string& path) {
  const std::string s = test::read_text(path);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

TEST(Gpt2Gguf, ReferenceFilesHaveTheConfigOfTheSafetensorsModel) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  for (const char* type : {"f32", "f16", "q8_0", "q4_0"}) {
    SCOPED_TRACE(type);
    const io::GgufFile f = io::GgufFile::open(gguf(type));
    const gpt2::Config c = checkpoints::read_gpt2_gguf_config(f);
    EXPECT_EQ(c.vocab_size, ck.config.vocab_size);
    EXPECT_EQ(c.n_positions, ck.config.n_positions);
    EXPECT_EQ(c.n_embd, ck.config.n_embd);
    EXPECT_EQ(c.n_layer, ck.config.n_layer);
    EXPECT_EQ(c.n_head, ck.config.n_head);
    EXPECT_EQ(c.mlp_dim(), ck.config.mlp_dim());
    EXPECT_EQ(c.layer_norm_epsilon, 1e-5);  // the f32 in the file, read back as the decimal
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);  // tied
    EXPECT_EQ(f.find_tensor("position_embd.weight")->type, io::GgmlType::f32);
    EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type, io::GgmlType::f32);
    const io::GgmlType head = f.find_tensor("token_embd.weight")->type;
    EXPECT_EQ(head, std::string(type) == "f32"   ? io::GgmlType::f32
                    : std::string(type) == "f16" ? io::GgmlType::f16
                                                 : io::GgmlType::q8_0);  // Q4_0's head too
  }
}

TEST(Gpt2Gguf, F32FileGivesTheSafetensorsLogitsBitForBit) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const checkpoints::Gpt2Gguf g = checkpoints::load_gpt2_gguf(gguf("f32"));
  ASSERT_EQ(g.checkpoint.params.size(), ck.params.size());
  EXPECT_EQ(std::memcmp(g.checkpoint.params.data(), ck.params.data(), ck.params.size() * 4), 0);
  EXPECT_TRUE(g.checkpoint.lm_head.empty());
  gpt2::Model st = checkpoints::load_gpt2_model(test::source_path(kTiny), "", DType::f32);
  gpt2::Model gg = checkpoints::load_gpt2_gguf_model(gguf("f32"), DType::f32);
  const std::vector<int> tokens = fixture_tokens();
  const std::vector<float> a = logits(st, tokens), b = logits(gg, tokens);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

TEST(Gpt2Gguf, F16FileHoldsTheRoundedWeights) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const checkpoints::Gpt2Gguf g = checkpoints::load_gpt2_gguf(gguf("f16"));
  const ParamLayout layout = gpt2::param_layout(ck.config);
  for (const ParamEntry& e : layout.entries()) {
    const bool half = e.shape.size() == 2 && e.name != "wpe.weight";
    for (size_t i = e.offset; i < e.offset + e.numel; ++i) {
      const float want = half ? f16_to_float(float_to_f16(ck.params[i])) : ck.params[i];
      ASSERT_EQ(g.checkpoint.params[i], want) << e.name;
    }
  }
}

TEST(Gpt2Gguf, QuantizedFilesLoadAndStayCloseToF32) {
  const std::vector<int> tokens = fixture_tokens();
  gpt2::Model f32 = checkpoints::load_gpt2_gguf_model(gguf("f32"), DType::f32);
  const std::vector<float> ref = logits(f32, tokens);
  // Logits have a standard deviation of about 0.16 (tests/fixtures/gpt2/README.md).
  for (const auto& [type, tol] : {std::pair{"q8_0", 0.01}, std::pair{"q4_0", 0.1}}) {
    SCOPED_TRACE(type);
    gpt2::Model q = checkpoints::load_gpt2_gguf_model(gguf(type), DType::f32);
    const std::vector<float> got = logits(q, tokens);
    double max_diff = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      max_diff = std::max(max_diff, static_cast<double>(std::abs(got[i] - ref[i])));
    EXPECT_LT(max_diff, tol);
    EXPECT_GT(max_diff, 0.0);
  }
}

TEST(Gpt2Gguf, QuantizedFilesRunInPlace) {
  const std::vector<int> tokens = fixture_tokens();
  // Q8_0: the file's blocks are ggml's quantization of the safetensors weights, which is what a
  // q8_0 model quantizes at load: the same logits bit for bit, without a copy of the weights.
  gpt2::Model in_place = checkpoints::load_gpt2_gguf_model(gguf("q8_0"));
  EXPECT_EQ(in_place.dtype(), DType::q8_0);
  gpt2::Model at_load = checkpoints::load_gpt2_model(test::source_path(kTiny), "", DType::q8_0);
  const std::vector<float> a = logits(in_place, tokens), b = logits(at_load, tokens);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  // Q4_0, its tied head Q8_0 in the file as in a q4_0 model quantized at load: the same again.
  gpt2::Model q4 = checkpoints::load_gpt2_gguf_model(gguf("q4_0"));
  EXPECT_EQ(q4.dtype(), DType::q4_0);
  gpt2::Model q4_at_load = checkpoints::load_gpt2_model(test::source_path(kTiny), "", DType::q4_0);
  const std::vector<float> e = logits(q4_at_load, tokens);
  // And an f32 computation over the dequantized weights: within f32 rounding of the same file
  // read as f32.
  gpt2::Model q4_f32 = checkpoints::load_gpt2_gguf_model(gguf("q4_0"), DType::f32);
  EXPECT_LT(q4.weight_bytes() * 4, q4_f32.weight_bytes());
  const std::vector<float> c = logits(q4, tokens), d = logits(q4_f32, tokens);
  EXPECT_EQ(std::memcmp(c.data(), e.data(), c.size() * 4), 0);
  for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], d[i], 1e-4) << i;
  // 8-bit activations pack every matrix in place, a file's over the mapping's own pages (a
  // private mapping: this process's copy of a page once written, so one copy resident): the
  // same bits again, and the file's own values back when turned off.
  const std::string file_before = test::read_text(gguf("q4_0"));
  for (gpt2::Model* m : {&q4, &q4_at_load, &in_place, &at_load}) m->set_activations(DType::q8_0);
  EXPECT_EQ(logits(q4, tokens), logits(q4_at_load, tokens));
  EXPECT_EQ(logits(in_place, tokens), logits(at_load, tokens));
  EXPECT_NE(logits(q4, tokens), c);
  // Neither the file nor another model mapping it meanwhile sees the packed bytes.
  EXPECT_EQ(test::read_text(gguf("q4_0")), file_before);
  gpt2::Model q4_again = checkpoints::load_gpt2_gguf_model(gguf("q4_0"));
  EXPECT_EQ(std::memcmp(logits(q4_again, tokens).data(), c.data(), c.size() * 4), 0);
  q4.set_activations(DType::f32);
  EXPECT_EQ(std::memcmp(logits(q4, tokens).data(), c.data(), c.size() * 4), 0);
  q4.set_activations(DType::q8_0);  // and again
  EXPECT_EQ(logits(q4, tokens), logits(q4_at_load, tokens));
}

TEST(Gpt2Gguf, TinylmWritesThePythonFilesByteForByte) {
  const checkpoints::Gpt2Checkpoint ck = tiny();
  const BpeTokenizer tok = tiny_tokenizer();
  test::TempDir dir;
  for (const auto& [name, type] :
       {std::pair{"f32", io::GgmlType::f32}, std::pair{"f16", io::GgmlType::f16},
        std::pair{"q8_0", io::GgmlType::q8_0}, std::pair{"q4_0", io::GgmlType::q4_0}}) {
    SCOPED_TRACE(name);
    const std::string out = dir.file(std::string(name) + ".gguf");
    checkpoints::save_gpt2_gguf(out, ck.config, ck.params, {}, tok, type);
    EXPECT_TRUE(file_bytes(out) == file_bytes(gguf(name)));
  }
}

TEST(Gpt2Gguf, TokenizerFromTheFileEqualsTheVocabularyFiles) {
  const BpeTokenizer a = checkpoints::load_gguf_tokenizer(gguf("f32"));
  const BpeTokenizer b = tiny_tokenizer();
  ASSERT_EQ(a.vocab_size(), 1000);
  EXPECT_EQ(a.num_merges(), b.num_merges());
  EXPECT_EQ(a.eot_id(), std::optional<int>(999));
  const std::string text = "The quick brown fox, in the end, isn't there. <|endoftext|>\n\n  x";
  EXPECT_EQ(a.encode(text, true), b.encode(text, true));
  EXPECT_EQ(a.decode(a.encode(text)), text);
}

TEST(Gpt2Gguf, UntiedHeadRoundTrips) {
  checkpoints::Gpt2Checkpoint ck = tiny();
  ck.lm_head.resize(static_cast<size_t>(ck.config.vocab_size) * ck.config.n_embd);
  for (size_t i = 0; i < ck.lm_head.size(); ++i)
    ck.lm_head[i] = 0.001f * static_cast<float>(i % 97);
  test::TempDir dir;
  checkpoints::save_gpt2_gguf(dir.file("m.gguf"), ck.config, ck.params, ck.lm_head,
                              tiny_tokenizer(), io::GgmlType::f32);
  const io::GgufFile f = io::GgufFile::open(dir.file("m.gguf"));
  ASSERT_NE(f.find_tensor("output.weight"), nullptr);
  const checkpoints::Gpt2Gguf g = checkpoints::load_gpt2_gguf(dir.file("m.gguf"));
  EXPECT_EQ(g.checkpoint.lm_head, ck.lm_head);
  EXPECT_EQ(g.checkpoint.params, ck.params);
}

TEST(Gpt2Gguf, ConvertRoundTripsThroughTheCli) {
  test::TempDir dir;
  const std::string tok = " --tokenizer " + test::source_path(kGguf + "/tokenizer");
  const test::CommandResult to =
      test::run_cli("convert " + test::source_path(kTiny) + " " + dir.file("m.gguf") + tok);
  ASSERT_EQ(to.exit_code, 0) << to.err;
  EXPECT_TRUE(file_bytes(dir.file("m.gguf")) == file_bytes(gguf("f32")));
  const test::CommandResult q = test::run_cli("convert " + test::source_path(kTiny) + " " +
                                              dir.file("q.gguf") + tok + " --dtype q4_0");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_TRUE(file_bytes(dir.file("q.gguf")) == file_bytes(gguf("q4_0")));
  // GGUF to GGUF keeps the input's type by default, and requantizing dequantized blocks gives
  // the same blocks (each block's extreme maps back to its scale): the same file again.
  const test::CommandResult qq =
      test::run_cli("convert " + gguf("q4_0") + " " + dir.file("qq.gguf"));
  ASSERT_EQ(qq.exit_code, 0) << qq.err;
  EXPECT_NE(qq.out.find("GGUF Q4_0"), std::string::npos) << qq.out;
  EXPECT_TRUE(file_bytes(dir.file("qq.gguf")) == file_bytes(gguf("q4_0")));
  const test::CommandResult back =
      test::run_cli("convert " + dir.file("m.gguf") + " " + dir.file("hf"));
  ASSERT_EQ(back.exit_code, 0) << back.err;
  const checkpoints::Gpt2Checkpoint a = tiny(), b = checkpoints::load_gpt2(dir.file("hf"));
  EXPECT_EQ(b.params, a.params);
  EXPECT_TRUE(b.lm_head.empty());
  const BpeTokenizer t = BpeTokenizer::from_directory(dir.file("hf"));
  EXPECT_EQ(t.vocab_size(), 1000);
  EXPECT_EQ(t.encode("hello there"), tiny_tokenizer().encode("hello there"));
  // The GGUF runs where a model directory runs: the same greedy text.
  const std::string args = " --prompt 'the end of the' --max-tokens 12";
  const test::CommandResult g1 = test::run_cli("generate --model " + gguf("f32") + args);
  const test::CommandResult g2 = test::run_cli("generate --model " + dir.file("hf") + args);
  ASSERT_EQ(g1.exit_code, 0) << g1.err;
  EXPECT_EQ(g1.out, g2.out);
  test::write_text(dir.file("t.txt"), "It was the best of times, it was the worst of times.");
  const test::CommandResult p = test::run_cli("perplexity --model " + gguf("q8_0") + " --file " +
                                              dir.file("t.txt") + " --context 8 --stride 4");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("perplexity"), std::string::npos);
  const test::CommandResult ids =
      test::run_cli("tokenize --tokenizer " + gguf("f16") + " 'the end'");
  EXPECT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out, test::run_cli("tokenize" + tok + " 'the end'").out);
}

// A tensor's new type and bytes.
struct Retyped {
  io::GgmlType type;
  std::span<const std::byte> bytes;
};

// A copy of `src`'s scalar metadata (strings, u32, f32) and tensors, with the u32 values in
// `u32` replaced and the tensors named in `tensors` stored as given.
void copy_gguf(const std::string& src, const std::string& dst,
               const std::map<std::string, uint32_t>& u32 = {},
               const std::map<std::string, Retyped>& tensors = {}) {
  const io::GgufFile f = io::GgufFile::open(src);
  io::GgufWriter w;
  for (const auto& [key, v] : f.metadata()) {
    if (u32.count(key))
      w.add_u32(key, u32.at(key));
    else if (v.type == io::GgufType::string)
      w.add_string(key, v.strings[0]);
    else if (v.type == io::GgufType::u32)
      w.add_u32(key, static_cast<uint32_t>(v.ints[0]));
    else if (v.type == io::GgufType::f32)
      w.add_f32(key, static_cast<float>(v.floats[0]));
  }
  for (const io::GgufTensor& t : f.tensors()) {
    if (const auto r = tensors.find(t.name); r != tensors.end())
      w.add_tensor(t.name, r->second.type, t.ne, r->second.bytes);
    else
      w.add_tensor(t.name, t.type, t.ne, f.data(t));
  }
  w.write(dst);
}

// A GPT-2 with Q6_K's 256-weight blocks: n_embd 256, MLP width 1024.
gpt2::Config q6_k_config() {
  gpt2::Config c;
  c.vocab_size = 1000;
  c.n_positions = 32;
  c.n_embd = 256;
  c.n_layer = 1;
  c.n_head = 4;
  return c;
}

// llama.cpp's quantizer writes a Q4_0 GPT-2 with its tied token_embd in Q6_K. It runs in
// place, the embedding and head read from the file's Q6_K blocks: the logits of the same file
// with token_embd stored as F32 holding the decoded values, bit for bit, and the other path
// (every tensor decoded to f32) reads it too.
TEST(Gpt2Gguf, Q4_0FileWithAQ6_KEmbeddingRunsInPlace) {
  test::TempDir dir;
  const gpt2::Config c = q6_k_config();
  const std::vector<double> normal = test::random_normal(gpt2::param_layout(c).size(), 5, 0.05);
  const std::vector<float> params(normal.begin(), normal.end());
  checkpoints::save_gpt2_gguf(dir.file("q4.gguf"), c, params, {}, tiny_tokenizer(),
                              io::GgmlType::q4_0, "q6k-test");
  const std::vector<std::byte> q6k =
      test::random_k_quant(DType::q6_k, static_cast<size_t>(c.vocab_size) * c.n_embd / 256, 7);
  copy_gguf(dir.file("q4.gguf"), dir.file("q6k.gguf"), {},
            {{"token_embd.weight", {io::GgmlType::q6_k, q6k}}});
  std::vector<float> decoded(static_cast<size_t>(c.vocab_size) * c.n_embd);
  checkpoints::decode_ggml(io::GgmlType::q6_k, q6k, decoded);
  copy_gguf(
      dir.file("q4.gguf"), dir.file("f32emb.gguf"), {},
      {{"token_embd.weight", {io::GgmlType::f32, std::as_bytes(std::span<const float>(decoded))}}});

  const std::vector<int> tokens = {1, 5, 999, 42, 7, 300};
  gpt2::Model a = checkpoints::load_gpt2_gguf_model(dir.file("q6k.gguf"));
  gpt2::Model b = checkpoints::load_gpt2_gguf_model(dir.file("f32emb.gguf"));
  EXPECT_EQ(a.dtype(), DType::q4_0);
  // In place: the embedding's 210 bytes a block, not 4 a weight.
  EXPECT_EQ(b.weight_bytes() - a.weight_bytes(), decoded.size() * 4 - q6k.size());
  const std::vector<float> la = logits(a, tokens), lb = logits(b, tokens);
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * 4), 0);
  const checkpoints::Gpt2Gguf all = checkpoints::load_gpt2_gguf(dir.file("q6k.gguf"));
  const size_t wte = gpt2::param_layout(c).find("wte.weight")->offset;
  EXPECT_EQ(std::memcmp(all.checkpoint.params.data() + wte, decoded.data(), decoded.size() * 4), 0);
  // Decode equals prefill here too.
  gpt2::KvCache cache = a.new_cache(static_cast<int>(tokens.size()));
  std::vector<float> step(static_cast<size_t>(c.vocab_size));
  for (size_t t = 0; t < tokens.size(); ++t) {
    a.forward(std::span(&tokens[t], 1), cache, step, /*all_logits=*/false);
    ASSERT_EQ(std::memcmp(step.data(), la.data() + t * step.size(), step.size() * 4), 0) << t;
  }
}

// A GGUF of q6_k_config()'s shape whose matrices have the given types (by tensor name; random
// blocks), run in place: as the same weights decoded to f32 up to f32 rounding, decode equals
// prefill, and the model reports `want` (the MLP's type).
void expect_runs_in_place(const std::map<std::string, io::GgmlType>& types, DType want) {
  test::TempDir dir;
  const gpt2::Config c = q6_k_config();
  const std::vector<double> normal = test::random_normal(gpt2::param_layout(c).size(), 6, 0.05);
  const std::vector<float> params(normal.begin(), normal.end());
  checkpoints::save_gpt2_gguf(dir.file("f32.gguf"), c, params, {}, tiny_tokenizer(),
                              io::GgmlType::f32, "kquant-test");
  std::map<std::string, std::vector<std::byte>> blocks;
  std::map<std::string, Retyped> retyped;
  uint32_t seed = 11;
  const io::GgufFile f32 = io::GgufFile::open(dir.file("f32.gguf"));
  size_t block_bytes = 0;
  for (const io::GgufTensor& t : f32.tensors()) {
    if (t.ne.size() != 2 || t.name == "position_embd.weight") continue;
    const io::GgmlType type = types.at(t.name);
    const DType dt = *checkpoints::ggml_block_dtype(type);
    const std::vector<std::byte>& b = blocks[t.name] =
        test::random_k_quant(dt, t.numel / 256, seed++);
    retyped[t.name] = {type, b};
    block_bytes += b.size();
  }
  ASSERT_EQ(retyped.size(), 5u);  // token_embd and the layer's four matrices
  copy_gguf(dir.file("f32.gguf"), dir.file("k.gguf"), {}, retyped);

  gpt2::Model q = checkpoints::load_gpt2_gguf_model(dir.file("k.gguf"));
  gpt2::Model f = checkpoints::load_gpt2_gguf_model(dir.file("k.gguf"), DType::f32);
  EXPECT_EQ(q.dtype(), want);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_LT(q.weight_bytes(), block_bytes + f.weight_bytes() / 4);  // the blocks, in place
  const std::vector<int> tokens = {3, 500, 17, 999, 0};
  const std::vector<float> lq = logits(q, tokens), lf = logits(f, tokens);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < lq.size(); ++i) {
    worst = std::max(worst, double(std::abs(lq[i] - lf[i])));
    scale = std::max(scale, double(std::abs(lf[i])));
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LT(worst, 1e-4 * scale);
  gpt2::KvCache cache = q.new_cache(static_cast<int>(tokens.size()));
  std::vector<float> step(static_cast<size_t>(c.vocab_size));
  for (size_t t = 0; t < tokens.size(); ++t) {
    q.forward(std::span(&tokens[t], 1), cache, step, /*all_logits=*/false);
    ASSERT_EQ(std::memcmp(step.data(), lq.data() + t * step.size(), step.size() * 4), 0) << t;
  }
  // Another type converts: every tensor decoded, then quantized at load.
  gpt2::Model q8 = checkpoints::load_gpt2_gguf_model(dir.file("k.gguf"), DType::q8_0);
  EXPECT_EQ(q8.dtype(), DType::q8_0);
  const std::vector<float> l8 = logits(q8, tokens);
  double worst8 = 0;
  for (size_t i = 0; i < l8.size(); ++i) worst8 = std::max(worst8, double(std::abs(l8[i] - lf[i])));
  EXPECT_LT(worst8, 0.05 * scale);
}

// llama.cpp's Q6_K files quantize every matrix to Q6_K; its Q4_K_M and Q5_K_M files mix Q4_K,
// Q5_K and Q6_K (llama_tensor_get_type: the tied token_embd and some ffn_down Q6_K, attn_qkv a
// step wider than the rest).
TEST(Gpt2Gguf, KQuantFilesRunInPlace) {
  using T = io::GgmlType;
  const auto mix = [](T emb, T qkv, T out, T up, T down) {
    return std::map<std::string, io::GgmlType>{{"token_embd.weight", emb},
                                               {"blk.0.attn_qkv.weight", qkv},
                                               {"blk.0.attn_output.weight", out},
                                               {"blk.0.ffn_up.weight", up},
                                               {"blk.0.ffn_down.weight", down}};
  };
  {
    SCOPED_TRACE("Q6_K");
    expect_runs_in_place(mix(T::q6_k, T::q6_k, T::q6_k, T::q6_k, T::q6_k), DType::q6_k);
  }
  {
    SCOPED_TRACE("Q4_K_M");
    expect_runs_in_place(mix(T::q6_k, T::q5_k, T::q4_k, T::q4_k, T::q6_k), DType::q4_k);
  }
  {
    SCOPED_TRACE("Q5_K_M");
    expect_runs_in_place(mix(T::q6_k, T::q6_k, T::q5_k, T::q5_k, T::q6_k), DType::q5_k);
  }
}

TEST(Gpt2Gguf, ErrorsNameTheFileAndTheProblem) {
  test::TempDir dir;
  // A GGUF that is not gpt2, and one whose tensor disagrees with the metadata.
  {
    io::GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.write(dir.file("llama.gguf"));
    test::expect_error([&] { checkpoints::load_gpt2_gguf(dir.file("llama.gguf")); },
                       {"llama.gguf", "architecture 'llama'"});
    const test::CommandResult r =
        test::run_cli("generate --model " + dir.file("llama.gguf") + " --prompt x");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("architecture 'llama'"), std::string::npos) << r.err;
  }
  {
    copy_gguf(gguf("f32"), dir.file("ff.gguf"), {{"gpt2.feed_forward_length", 128}});
    test::expect_error([&] { checkpoints::load_gpt2_gguf(dir.file("ff.gguf")); },
                       {"ff.gguf", "blk.0.ffn_up.weight", "do not match the metadata"});
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
