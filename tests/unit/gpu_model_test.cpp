// GPT-2 inference on the GPU (Model::to_gpu: forward_pass.h on the Vulkan backend) against the
// CPU model and PyTorch's float64 logits (tests/fixtures/gpt2/tiny, made by
// tools/gen_gpt2_fixtures.py): logits per row within the issue's bounds, decode = prefill and a
// row of a batch = the row alone bit for bit on the device, greedy texts and perplexity as the
// CPU's. Skipped, with the reason, where the build has no Vulkan or there is no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gpt2_tiny.h"
#include "serve_test_server.h"
#include "test_util.h"
#include "tinylm/generate/decode_backend.h"
#include "tinylm/generate/generate.h"
#include "tinylm/generate/gpt2_perplexity.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/models/gpt2/model.h"
#ifdef TINYLM_HAVE_VULKAN
#include "gpu_fixture.h"
#include "tinylm/kernels/vulkan/context.h"
#include "tinylm/kernels/vulkan/devices.h"
#endif

namespace tinylm::gpt2 {
namespace TINYLM_TEST_LOCAL {

// (Built without Vulkan, GpuOps.NeedVulkan says so once for every GPU test.)
#ifdef TINYLM_HAVE_VULKAN

namespace vk = kernels::vulkan;
using test_tiny::kTokens;

const std::string kDir = "tests/fixtures/gpt2/tiny";

nlohmann::json expected() {
  return nlohmann::json::parse(test::read_text(test::source_path(kDir + "/expected.json")));
}
std::vector<int> ints(const nlohmann::json& j) { return j.get<std::vector<int>>(); }

// The largest |a - b| over the largest |b|, row by row of `width`: the worst row.
double worst_row_error(const std::vector<float>& a, const std::vector<float>& b, size_t width) {
  double worst = 0;
  for (size_t r = 0; r * width < b.size(); ++r) {
    double diff = 0, scale = 0;
    for (size_t i = r * width; i < (r + 1) * width; ++i) {
      diff = std::max(diff, std::abs(double(a[i]) - b[i]));
      scale = std::max(scale, std::abs(double(b[i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

class GpuModel : public ::testing::TestWithParam<vk::Validation> {
 protected:
  void SetUp() override {
    if (const auto why = test::no_gpu()) GTEST_SKIP() << *why;
    gpu_ = std::make_shared<vk::Context>(0, GetParam());
  }
  void TearDown() override {
    if (!gpu_ || !gpu_->validation()) return;
    const std::vector<std::string> messages = gpu_->validation_messages();
    EXPECT_TRUE(messages.empty()) << messages.size()
                                  << " validation messages, the first: " << messages.front();
  }
  // The tiny model on the CPU in `dtype`, and on the GPU in `dtype` from its f32 weights.
  static Model cpu(DType dtype) {
    const checkpoints::Gpt2Checkpoint ck = test_tiny::checkpoint();
    return Model(ck.config, ck.params, dtype, ck.lm_head);
  }
  Model gpu(DType dtype) { return cpu(DType::f32).to_gpu(gpu_, dtype); }

  std::shared_ptr<vk::Context> gpu_;
};

// Every position's logits against the CPU model of the same dtype (f32: the issue's 1e-4 of
// each row's largest logit; bf16 and f16: the bounds of the CPU's own half-precision tests, as
// the caches differ: f32 on the GPU for bf16, where the CPU's is bf16), and f32 against
// PyTorch's float64 logits too.
TEST_P(GpuModel, LogitsMatchTheCpuAndPyTorch) {
  const int64_t V = cpu(DType::f32).config().vocab_size;
  for (const DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Model g = gpu(dt), c = cpu(dt);
    EXPECT_FALSE(g.device_name().empty());
    const std::vector<float> got = test_tiny::all_logits(g, kTokens);
    const std::vector<float> want = test_tiny::all_logits(c, kTokens);
    const double bound = dt == DType::f32 ? 1e-4 : dt == DType::f16 ? 2e-3 : 1e-2;
    EXPECT_LT(worst_row_error(got, want, V), bound) << dtype_name(dt);
  }
  Model g = gpu(DType::f32);
  const std::vector<int> tokens = ints(expected()["tokens"]);
  const std::vector<float> got = test_tiny::all_logits(g, tokens);
  const std::vector<double> ref =
      io::SafetensorsFile::open(test::source_path(kDir + "/expected_logits.safetensors"))
          .read_f64("logits_f64");
  ASSERT_EQ(ref.size(), got.size());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
  EXPECT_LT(worst, 1e-4) << "against PyTorch (float64)";
}

// A prompt and then one token at a time gives the bits of the whole sequence at once.
TEST_P(GpuModel, DecodeEqualsPrefill) {
  for (const DType dt : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    Model g = gpu(dt);
    test_tiny::expect_decode_equals(g, test_tiny::all_logits(g, kTokens));
  }
}

// Sequences of different lengths stepping together (forward_batch), and prompts prefilled
// together (forward_sequences), each give the bits of the sequence alone. Caches are taken
// and let go throughout, so the device's pool grows while it holds sequences.
TEST_P(GpuModel, BatchedEqualsAlone) {
  Model g = gpu(DType::f16);
  const int64_t V = g.config().vocab_size;
  const int n = static_cast<int>(kTokens.size());
  const std::vector<int> lengths = {4, 1, 9};
  std::vector<KvCache> alone, together;
  std::vector<int> joined;
  std::vector<KvCache*> caches;
  std::vector<float> one(V), all(3 * V);
  for (int s = 0; s < 3; ++s) {
    alone.push_back(g.new_cache(n + 4));
    together.push_back(g.new_cache(n - s + 4));
    joined.insert(joined.end(), kTokens.begin() + s, kTokens.begin() + s + lengths[s]);
    KvCache scratch = g.new_cache(2);  // taken and let go
  }
  for (auto& c : together) caches.push_back(&c);
  g.forward_sequences(joined, lengths, caches, all);
  for (int s = 0; s < 3; ++s) {
    g.forward(std::span(kTokens).subspan(s, lengths[s]), alone[s], one);
    ASSERT_EQ(std::memcmp(one.data(), all.data() + s * V, V * sizeof(float)), 0) << s;
  }
  // Steps of three rows (recorded once, then replayed at new positions); after the fourth
  // step the pool grows (the recording is then made again).
  std::vector<KvCache> more;
  for (int step = 0; step < 6; ++step) {
    if (step == 4)
      for (int k = 0; k < 3; ++k) more.push_back(g.new_cache(2));
    std::vector<int> next;
    for (int s = 0; s < 3; ++s) next.push_back(kTokens[(lengths[s] + s + step) % n]);
    g.forward_batch(next, caches, all);
    for (int s = 0; s < 3; ++s) {
      g.forward(std::span(&next[s], 1), alone[s], one);
      ASSERT_EQ(std::memcmp(one.data(), all.data() + s * V, V * sizeof(float)), 0)
          << "sequence " << s << ", step " << step;
      ASSERT_EQ(together[s].length, alone[s].length);
    }
  }
}

// Greedy decoding gives the CPU's (and PyTorch's) tokens; perplexity the CPU's within 1e-5.
TEST_P(GpuModel, GreedyTextAndPerplexityAsTheCpu) {
  Model g = gpu(DType::f32), c = cpu(DType::f32);
  const auto greedy = expected()["greedy"];
  generate::GenerateOptions opt;
  opt.max_tokens = greedy["new_tokens"].get<int>();
  const std::vector<int> prompt = ints(greedy["prompt"]);
  const auto on_gpu = generate::generate(*generate::gpt2_backend(g), prompt, opt).ids;
  EXPECT_EQ(on_gpu, ints(greedy["ids"]));
  EXPECT_EQ(on_gpu, generate::generate(*generate::gpt2_backend(c), prompt, opt).ids);
  const auto p = expected()["perplexity"];
  const std::vector<int> tokens = ints(p["tokens"]);
  const int context = p["context"].get<int>(), stride = p["stride"].get<int>();
  const generate::PerplexityResult a = generate::perplexity(g, tokens, context, stride);
  const generate::PerplexityResult b = generate::perplexity(c, tokens, context, stride);
  EXPECT_EQ(a.count, b.count);
  EXPECT_NEAR(a.mean_nll(), b.mean_nll(), 1e-5);
}

// The server on the GPU: concurrent greedy requests (continuous batching: prefills together,
// then steps of several rows) get the texts the CPU server gives them.
TEST_P(GpuModel, ServerGivesTheCpuTexts) {
  const auto texts = [](serve::Running& server) {
    std::vector<std::string> out(4);
    std::vector<std::thread> clients;
    for (size_t i = 0; i < out.size(); ++i) {
      clients.emplace_back([&server, &out, i] {
        const std::string body = R"({"prompt":[)" + std::to_string(11 + i * 7) + "," +
                                 std::to_string(400 + i) + R"(],"max_tokens":)" +
                                 std::to_string(6 + 3 * i) + R"(,"temperature":0})";
        const auto r = server.client().Post("/v1/completions", body, "application/json");
        out[i] = r ? nlohmann::json::parse(r->body)["choices"][0]["text"].get<std::string>()
                   : "no response";
      });
    }
    for (auto& t : clients) t.join();
    return out;
  };
  serve::ServerOptions o;
  o.slots = 4;
  serve::Running cpu_server(o, 64, 64, 1024);
  serve::Running gpu_server(o, 64, 64, 1024, gpu_);
  const std::vector<std::string> want = texts(cpu_server), got = texts(gpu_server);
  EXPECT_EQ(got, want);
  for (const std::string& t : got) EXPECT_FALSE(t.empty());
}

TEST_P(GpuModel, RefusesWhatItCannotRun) {
  Model c = cpu(DType::f32);
  EXPECT_THROW(c.to_gpu(gpu_, DType::q8_0), Error);
  EXPECT_THROW(cpu(DType::f16).to_gpu(gpu_, DType::f16), Error);  // from f32 weights only
  Model g = c.to_gpu(gpu_, DType::f32);
  EXPECT_THROW(g.set_activations(DType::bf16), Error);
  KvCache host = c.new_cache(4);
  std::vector<float> logits(g.config().vocab_size);
  EXPECT_THROW(g.forward(std::span(kTokens).first(2), host, logits), Error);
}

INSTANTIATE_TEST_SUITE_P(Vulkan, GpuModel,
                         ::testing::Values(vk::Validation::off, vk::Validation::on),
                         kernels::ops_table::validation_name);

#endif  // TINYLM_HAVE_VULKAN

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::gpt2
