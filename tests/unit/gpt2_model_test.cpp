// GPT-2 inference against fixtures written by tools/gen_gpt2_fixtures.py (an independent
// PyTorch implementation, float64 reference outputs) for a small random GPT-2 saved in the
// exact Hugging Face layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/error.h"
#include "tinylm/generate/generate.h"
#include "tinylm/generate/gpt2_perplexity.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/models/gpt2/model.h"

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

const std::string kDir = "tests/fixtures/gpt2/tiny";

nlohmann::json expected() {
  return nlohmann::json::parse(test::read_text(test::source_path(kDir + "/expected.json")));
}
std::vector<int> ints(const nlohmann::json& j) { return j.get<std::vector<int>>(); }
double num(const nlohmann::json& j) { return std::strtod(j.get<std::string>().c_str(), nullptr); }

Model load(const std::string& weights, DType dtype) {
  const checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(
      test::source_path(kDir + "/" + weights), test::source_path(kDir + "/config.json"));
  return Model(ck.config, ck.params, dtype, ck.lm_head);
}

std::vector<double> reference_logits(const std::string& name) {
  const auto f =
      io::SafetensorsFile::open(test::source_path(kDir + "/expected_logits.safetensors"));
  return f.read_f64(name);
}

double max_abs_diff(std::span<const float> a, std::span<const double> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Documented tolerances on logits (max absolute difference from the float64 reference, on
// logits of magnitude ~1): f32 1e-4 (measured 2e-7); bf16 weights against the reference
// computed from the same bf16 weights 2e-3 (measured 2.4e-4: the KV cache is bf16 too);
// f16 weights and cache against the f32 reference 2e-3 (measured 1.8e-4).
struct DtypeCase {
  DType dtype;
  const char* weights;
  const char* reference;
  double tolerance;
};

class Gpt2Logits : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(Gpt2Logits, FullSequenceMatchesPyTorch) {
  const DtypeCase p = GetParam();
  Model m = load(p.weights, p.dtype);
  const std::vector<int> tokens = ints(expected()["tokens"]);
  KvCache cache = m.new_cache(static_cast<int>(tokens.size()));
  std::vector<float> logits(tokens.size() * m.config().vocab_size);
  m.forward(tokens, cache, logits, true);
  const double diff = max_abs_diff(logits, reference_logits(p.reference));
  std::printf("[%s from %s] max |logit - reference| = %.3g\n",
              std::string(dtype_name(p.dtype)).c_str(), p.weights, diff);
  EXPECT_LT(diff, p.tolerance);
}

// Decoding token by token against the cache gives exactly the logits of the full
// recomputation, at every kernel level: the fixture's widths tile, and then every kernel
// computes a position's bits whatever the number of positions in the batch.
TEST_P(Gpt2Logits, KvCacheDecodingEqualsFullRecomputation) {
  const DtypeCase p = GetParam();
  Model m = load(p.weights, p.dtype);
  const std::vector<int> tokens = ints(expected()["tokens"]);
  const int64_t V = m.config().vocab_size;
  const int n = static_cast<int>(tokens.size());
  test::for_each_isa([&](kernels::Isa) {
    KvCache full = m.new_cache(n);
    std::vector<float> all(n * V), one(V);
    m.forward(tokens, full, all, true);
    KvCache inc = m.new_cache(n);
    m.forward(std::span(tokens).first(5), inc, std::span(one));  // a prefill of 5, then steps
    for (int t = 5; t < n; ++t) {
      m.forward(std::span(tokens).subspan(t, 1), inc, one);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + t * V, V * sizeof(float)), 0)
          << "position " << t;
    }
  });
}

// Continuous batching: sequences at different positions (different prompts, caches of
// different capacities) step together in one forward_batch, and each row's logits are the
// bits of that sequence stepping alone, at every level.
TEST_P(Gpt2Logits, BatchedDecodingEqualsEachSequenceAlone) {
  const DtypeCase p = GetParam();
  Model m = load(p.weights, p.dtype);
  const std::vector<int> tokens = ints(expected()["tokens"]);
  const int64_t V = m.config().vocab_size;
  const int n = static_cast<int>(tokens.size());
  const int prompts[3] = {1, 4, 9};  // sequence s: a prefill of prompts[s] tokens, then steps
  test::for_each_isa([&](kernels::Isa) {
    std::vector<KvCache> alone, batched;
    std::vector<float> one(V), all(3 * V);
    for (int s = 0; s < 3; ++s) {
      alone.push_back(m.new_cache(n - s));
      batched.push_back(m.new_cache(n));
      m.forward(std::span(tokens).first(prompts[s]), alone[s], one);
      m.forward(std::span(tokens).first(prompts[s]), batched[s], one);
    }
    for (int step = 0; prompts[2] + step < n - 2; ++step) {
      std::vector<int> next;
      std::vector<KvCache*> caches;
      for (int s = 0; s < 3; ++s) {
        next.push_back(tokens[(prompts[s] + step) % n]);
        caches.push_back(&batched[s]);
      }
      m.forward_batch(next, caches, all);
      for (int s = 0; s < 3; ++s) {
        m.forward(std::span(&next[s], 1), alone[s], one);
        ASSERT_EQ(std::memcmp(one.data(), all.data() + s * V, V * sizeof(float)), 0)
            << "sequence " << s << ", step " << step;
        ASSERT_EQ(batched[s].length, alone[s].length);
      }
    }
  });
}

// Several prompts prefilled in one forward_sequences (a server's admitted requests) give each
// prompt's last logits and cache as forward() of that prompt alone: the next step of each
// equals the alone sequence's too.
TEST_P(Gpt2Logits, SequencesTogetherEqualEachAlone) {
  const DtypeCase p = GetParam();
  Model m = load(p.weights, p.dtype);
  const std::vector<int> tokens = ints(expected()["tokens"]);
  const int64_t V = m.config().vocab_size;
  const int n = static_cast<int>(tokens.size());
  const std::vector<int> lengths = {4, 1, 9};  // prompts: tokens[s .. s + lengths[s])
  test::for_each_isa([&](kernels::Isa) {
    std::vector<KvCache> alone, together;
    std::vector<int> joined;
    std::vector<KvCache*> caches;
    std::vector<float> one(V), all(3 * V);
    for (int s = 0; s < 3; ++s) {
      alone.push_back(m.new_cache(n));
      together.push_back(m.new_cache(n - s));
      joined.insert(joined.end(), tokens.begin() + s, tokens.begin() + s + lengths[s]);
    }
    for (auto& c : together) caches.push_back(&c);
    m.forward_sequences(joined, lengths, caches, all);
    for (int s = 0; s < 3; ++s) {
      m.forward(std::span(tokens).subspan(s, lengths[s]), alone[s], one);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + s * V, V * sizeof(float)), 0) << s;
      ASSERT_EQ(together[s].length, lengths[s]);
    }
    std::vector<int> next = {tokens[n - 1], tokens[n - 2], tokens[n - 3]};
    m.forward_batch(next, caches, all);
    for (int s = 0; s < 3; ++s) {
      m.forward(std::span(&next[s], 1), alone[s], one);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + s * V, V * sizeof(float)), 0) << s;
    }
  });
}

TEST(Gpt2Batch, SequencesRefuseBadLengths) {
  Model m = load("model.safetensors", DType::f32);
  const int64_t V = m.config().vocab_size;
  KvCache a = m.new_cache(2), b = m.new_cache(4);
  std::vector<float> logits(2 * V);
  const int ids[4] = {1, 2, 3, 4};
  KvCache* both[2] = {&a, &b};
  const int empty[2] = {0, 4};
  EXPECT_THROW(m.forward_sequences(ids, empty, both, logits), Error);  // a sequence of none
  const int too_long[2] = {3, 1};
  EXPECT_THROW(m.forward_sequences(ids, too_long, both, logits), Error);  // a's room is 2
  const int short_sum[2] = {1, 1};
  EXPECT_THROW(m.forward_sequences(ids, short_sum, both, logits), Error);  // 4 tokens for 2
  const int fine[2] = {2, 2};
  m.forward_sequences(ids, fine, both, logits);
  EXPECT_EQ(a.length, 2);
  EXPECT_EQ(b.length, 2);
}

TEST(Gpt2Batch, RefusesSharedOrFullCaches) {
  Model m = load("model.safetensors", DType::f32);
  const int64_t V = m.config().vocab_size;
  KvCache a = m.new_cache(2), b = m.new_cache(1);
  std::vector<float> logits(2 * V);
  const int ids[2] = {1, 2};
  KvCache* same[2] = {&a, &a};
  EXPECT_THROW(m.forward_batch(ids, same, logits), Error);
  m.forward(std::span(ids, 1), b, std::span(logits).first(V));
  KvCache* full[2] = {&a, &b};
  EXPECT_THROW(m.forward_batch(ids, full, logits), Error);
  KvCache* one[1] = {&a};
  EXPECT_THROW(m.forward_batch(ids, one, logits), Error);  // two tokens, one cache
}

// Every kernel of inference promises the same bits at every level: the full sequence's logits,
// and those of a prefill followed by single steps, are the same bytes at every level.
TEST_P(Gpt2Logits, SameLogitsAtEveryLevel) {
  const DtypeCase p = GetParam();
  Model m = load(p.weights, p.dtype);
  const std::vector<int> tokens = ints(expected()["tokens"]);
  const int64_t V = m.config().vocab_size;
  const int n = static_cast<int>(tokens.size());
  test::expect_same_at_every_level(
      [&] {
        KvCache cache = m.new_cache(n);
        std::vector<float> all(n * V);
        m.forward(tokens, cache, all, true);
        return all;
      },
      "full sequence");
  test::expect_same_at_every_level(
      [&] {
        KvCache cache = m.new_cache(n);
        std::vector<float> steps(3 * V), one(V);
        m.forward(std::span(tokens).first(7), cache, std::span(one));
        for (int t = 7; t < 10; ++t) {
          m.forward(std::span(tokens).subspan(t, 1), cache, one);
          std::copy(one.begin(), one.end(), steps.begin() + (t - 7) * V);
        }
        return steps;
      },
      "prefill and decode");
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, Gpt2Logits,
    ::testing::Values(DtypeCase{DType::f32, "model.safetensors", "logits_f64", 1e-4},
                      DtypeCase{DType::bf16, "model_bf16.safetensors", "logits_bf16w", 2e-3},
                      DtypeCase{DType::f16, "model.safetensors", "logits_f64", 2e-3},
                      DtypeCase{DType::f32, "model_prefixed.safetensors", "logits_f64", 1e-4},
                      // Quantized weights against the f32 reference: the quantization error
                      // itself, measured 5.5e-3 (q8_0) and 4.1e-2 (q4_0); gpt2_quant_test.cpp
                      // holds them to an f32 model over the dequantized weights.
                      DtypeCase{DType::q8_0, "model.safetensors", "logits_f64", 2e-2},
                      DtypeCase{DType::q4_0, "model.safetensors", "logits_f64", 1e-1}),
    [](const auto& param_info) {
      return std::string(dtype_name(param_info.param.dtype)) + "_" +
             std::to_string(param_info.index);
    });

// An f32 model mapped in place from the file computes exactly what the copied one does.
// bf16/f16 models keep their Conv1D matrices in 16 x 16 tiles when the widths allow and
// row-major otherwise (n_embd 24, or an n_inner of 40); either way they compute what an f32
// model over the same (rounded) weights does, to the rounding of the half-precision KV cache.
TEST(Gpt2Logits, HalfModelsWithAndWithoutTilesMatchF32) {
  for (const auto& [n_embd, n_inner] : {std::pair{32, 0}, std::pair{24, 0}, std::pair{32, 40}}) {
    Config c;
    c.vocab_size = 50;
    c.n_positions = 16;
    c.n_embd = n_embd;
    c.n_inner = n_inner;
    c.n_layer = 2;
    c.n_head = 2;
    const ParamLayout L = param_layout(c);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 0.2f);
    std::vector<float> params(L.size());
    for (float& p : params) p = normal(rng);
    for (DType dt : {DType::bf16, DType::f16}) {
      std::vector<float> rounded(params.size());  // the weights the half model holds, in f32
      for (size_t i = 0; i < params.size(); ++i) {
        rounded[i] = dt == DType::bf16 ? bf16_to_float(float_to_bf16(params[i]))
                                       : f16_to_float(float_to_f16(params[i]));
      }
      Model half(c, params, dt), full(c, rounded, DType::f32);
      const std::vector<int> tokens = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7};
      std::vector<float> a(tokens.size() * c.vocab_size), b(a.size());
      KvCache ca = half.new_cache(16), cb = full.new_cache(16);
      half.forward(std::span(tokens).first(6), ca, std::span(a).first(6 * c.vocab_size),
                   true);                           // prefill
      for (size_t t = 6; t < tokens.size(); ++t) {  // decode
        half.forward(std::span(tokens).subspan(t, 1), ca,
                     std::span(a).subspan(t * c.vocab_size, c.vocab_size));
      }
      full.forward(tokens, cb, b, true);
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, double(std::abs(a[i] - b[i])) / (1 + std::abs(b[i])));
      // Measured: bf16 1.5-2.1e-3, f16 1.3-2.5e-4 (relative to 1 + |logit|).
      EXPECT_LT(worst, dt == DType::bf16 ? 1e-2 : 2e-3)
          << "n_embd " << n_embd << " n_inner " << n_inner << " " << dtype_name(dt);
      EXPECT_GT(worst, 0.0);  // the KV cache does round
    }
  }
}

// Perplexity's logits (Model::forward_rows: every scored row, here 70, from the 32 on which an
// f32 head once went to oneDNN's gemm) are the bits forward() gives those rows, for each weight
// type with f32 activations, and the same at every level. An odd vocabulary leaves outputs
// over after the head's register tiles.
TEST(Gpt2Logits, ForwardRowsEqualsForwardAtEveryLevel) {
  Config c;
  c.vocab_size = 1001;
  c.n_positions = 96;
  c.n_embd = 64;
  c.n_layer = 2;
  c.n_head = 4;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  std::vector<float> params(param_layout(c).size());
  for (float& p : params) p = normal(rng);
  std::vector<int> tokens(80);
  for (int& t : tokens) t = static_cast<int>(rng() % c.vocab_size);
  const int64_t V = c.vocab_size, n = static_cast<int64_t>(tokens.size()), first = 10;
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::q8_0}) {
    SCOPED_TRACE(dtype_name(dt));
    Model m(c, params, dt);
    const std::vector<float> all = test::expect_same_at_every_level(
        [&] {
          KvCache cache = m.new_cache(c.n_positions);
          std::vector<float> logits(n * V);
          m.forward(tokens, cache, logits, true);
          return logits;
        },
        "forward");
    const std::vector<float> rows = test::expect_same_at_every_level(
        [&] {
          KvCache cache = m.new_cache(c.n_positions);
          std::vector<float> logits((n - first) * V);
          m.forward_rows(tokens, cache, logits, first);
          return logits;
        },
        "forward_rows");
    ASSERT_EQ(rows.size(), all.size() - first * V);
    EXPECT_EQ(std::memcmp(rows.data(), all.data() + first * V, rows.size() * sizeof(float)), 0);
  }
}

TEST(Gpt2Checkpoint, InPlaceF32ModelEqualsCopiedModel) {
  const std::vector<int> tokens = ints(expected()["tokens"]);
  for (const char* weights : {"model.safetensors", "model_prefixed.safetensors"}) {
    Model copied = load(weights, DType::f32);
    Model mapped =
        checkpoints::load_gpt2_model(test::source_path(kDir + "/" + weights),
                                     test::source_path(kDir + "/config.json"), DType::f32);
    const int64_t V = copied.config().vocab_size;
    std::vector<float> a(tokens.size() * V), b(tokens.size() * V);
    KvCache ca = copied.new_cache(static_cast<int>(tokens.size()));
    KvCache cb = mapped.new_cache(static_cast<int>(tokens.size()));
    copied.forward(tokens, ca, a, true);
    mapped.forward(tokens, cb, b, true);
    EXPECT_EQ(a, b) << weights;
    EXPECT_EQ(mapped.weight_bytes(), copied.weight_bytes()) << weights;
  }
  // A bf16 file asked for as f32 falls back to reading and converting.
  Model from_bf16 =
      checkpoints::load_gpt2_model(test::source_path(kDir + "/model_bf16.safetensors"),
                                   test::source_path(kDir + "/config.json"), DType::f32);
  EXPECT_EQ(from_bf16.dtype(), DType::f32);
}

// Loading tensor by tensor straight into the half-precision storage computes exactly what
// converting a whole f32 copy does.
TEST(Gpt2Checkpoint, StreamingHalfLoadEqualsConvertedCopy) {
  const std::vector<int> tokens = ints(expected()["tokens"]);
  for (DType dt : {DType::bf16, DType::f16}) {
    for (const char* weights : {"model.safetensors", "model_bf16.safetensors"}) {
      checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(
          test::source_path(kDir + "/" + weights), test::source_path(kDir + "/config.json"));
      Model copied(ck.config, ck.params, dt);
      Model streamed = checkpoints::load_gpt2_model(test::source_path(kDir + "/" + weights),
                                                    test::source_path(kDir + "/config.json"), dt);
      const int64_t V = copied.config().vocab_size;
      std::vector<float> a(tokens.size() * V), b(tokens.size() * V);
      KvCache ca = copied.new_cache(static_cast<int>(tokens.size()));
      KvCache cb = streamed.new_cache(static_cast<int>(tokens.size()));
      copied.forward(tokens, ca, a, true);
      streamed.forward(tokens, cb, b, true);
      EXPECT_EQ(a, b) << weights << " as " << dtype_name(dt);
      EXPECT_EQ(streamed.weight_bytes(), copied.weight_bytes());
    }
  }
}

// The generate loop over GPT-2's decode interface.
generate::GenerateResult gpt2_generate(Model& m, std::span<const int> prompt,
                                       const generate::GenerateOptions& o) {
  return generate::generate(*generate::gpt2_backend(m), prompt, o);
}

TEST(Gpt2Generate, GreedyContinuationMatchesPyTorch) {
  for (const auto& [weights, key, dtype] :
       {std::tuple{"model.safetensors", "greedy", DType::f32},
        std::tuple{"model_bf16.safetensors", "greedy_bf16", DType::f32}}) {
    Model m = load(weights, dtype);
    const auto g = expected()[key];
    generate::GenerateOptions opt;
    opt.max_tokens = g["new_tokens"].get<int>();
    const generate::GenerateResult r = gpt2_generate(m, ints(g["prompt"]), opt);
    EXPECT_EQ(r.ids, ints(g["ids"])) << key;
  }
}

TEST(Gpt2Generate, StopsAtTheContextEnd) {
  Model m = load("model.safetensors", DType::f32);
  generate::GenerateOptions opt;
  opt.max_tokens = 100;
  const std::vector<int> prompt(60, 7);
  const generate::GenerateResult r = gpt2_generate(m, prompt, opt);
  EXPECT_TRUE(r.hit_context_end);
  EXPECT_EQ(r.ids.size(), 5u);  // 60 + 4 positions fill the context of 64; the 5th is drawn from it
}

TEST(Gpt2Generate, SeededSamplingIsReproducible) {
  Model m = load("model.safetensors", DType::f32);
  generate::GenerateOptions opt;
  opt.max_tokens = 20;
  opt.sampling = {0.9, 50, 0.95, 123};
  const std::vector<int> prompt{1, 2, 3};
  const auto a = gpt2_generate(m, prompt, opt).ids;
  EXPECT_EQ(gpt2_generate(m, prompt, opt).ids, a);
  opt.sampling.seed = 124;
  EXPECT_NE(gpt2_generate(m, prompt, opt).ids, a);
}

TEST(Gpt2Perplexity, SlidingWindowsMatchPyTorch) {
  Model m = load("model.safetensors", DType::f32);
  for (const char* key : {"perplexity", "perplexity_nonoverlap"}) {
    const auto p = expected()[key];
    const generate::PerplexityResult r =
        generate::perplexity(m, ints(p["tokens"]), p["context"].get<int>(), p["stride"].get<int>());
    EXPECT_EQ(r.count, p["count"].get<int64_t>()) << key;
    EXPECT_NEAR(r.mean_nll(), num(p["mean_nll"]), 1e-5) << key;
    EXPECT_NEAR(r.perplexity(), num(p["ppl"]), 1e-4 * num(p["ppl"])) << key;
  }
}

TEST(Gpt2Checkpoint, InitSavesALoadableHuggingFaceDirectory) {
  test::TempDir dir;
  const checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(test::source_path(kDir));
  checkpoints::save_gpt2(dir.file("out"), ck.config, ck.params);
  const checkpoints::Gpt2Checkpoint back = checkpoints::load_gpt2(dir.file("out"));
  EXPECT_EQ(back.params, ck.params);
  const auto f = io::SafetensorsFile::open(dir.file("out/model.safetensors"));
  ASSERT_NE(f.find("h.1.attn.bias"), nullptr);
  EXPECT_EQ(f.find("h.1.attn.bias")->shape, (Shape{1, 1, 64, 64}));
}

TEST(Gpt2Checkpoint, ErrorsNameTheFileAndTheTensor) {
  test::TempDir dir;
  // A checkpoint missing one tensor and with another of the wrong shape.
  const checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(test::source_path(kDir));
  const ParamLayout L = param_layout(ck.config);
  std::vector<io::SafetensorsWriteEntry> ts;
  std::vector<float> wrong(10, 0.0f);
  for (const ParamEntry& e : L.entries()) {
    if (e.name == "h.1.ln_2.bias") continue;
    if (e.name == "ln_f.weight") {
      ts.push_back({e.name, "F32", {10}, std::as_bytes(std::span(wrong))});
      continue;
    }
    ts.push_back(
        {e.name, "F32", e.shape, std::as_bytes(std::span(ck.params).subspan(e.offset, e.numel))});
  }
  std::filesystem::copy_file(test::source_path(kDir + "/config.json"), dir.file("config.json"));
  io::write_safetensors(dir.file("model.safetensors"), ts, {});
  test::expect_error([&] { checkpoints::load_gpt2(dir.path().string()); }, {"h.1.ln_2.bias"});
  ts.erase(
      std::remove_if(ts.begin(), ts.end(), [](const auto& t) { return t.name == "ln_f.weight"; }),
      ts.end());
  // Bad configurations.
  test::write_text(dir.file("config.json"), R"({"vocab_size": 1000, "n_positions": 64, "n_embd": 64,
    "n_layer": 2, "n_head": 4, "activation_function": "relu"})");
  test::expect_error([&] { checkpoints::load_gpt2(dir.path().string()); }, {"activation_function"});
  test::write_text(dir.file("config.json"),
                   R"({"vocab_size": 1000, "n_embd": 64, "n_layer": 2, "n_head": 4})");
  test::expect_error([&] { checkpoints::load_gpt2(dir.path().string()); }, {"n_ctx"});
  test::write_text(dir.file("config.json"), R"({"vocab_size": 1000, "n_positions": 64, "n_embd": 64,
    "n_layer": 2, "n_head": 5})");
  test::expect_error([&] { checkpoints::load_gpt2(dir.path().string()); }, {"divisible"});
  test::write_text(dir.file("config.json"), "{not json");
  test::expect_error([&] { checkpoints::load_gpt2(dir.path().string()); }, {"config.json"});
  test::expect_error([&] { checkpoints::load_gpt2(dir.file("nothing-here")); }, {"nothing-here"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
