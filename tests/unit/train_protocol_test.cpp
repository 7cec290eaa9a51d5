// The GPT-2 reference protocol's bookkeeping: Python-repr formatting and pairwise sums against
// values CPython computed (tools/gen_protocol_fixtures.py), the token grid loader's errors,
// fingerprints and the metrics JSON schema.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/param_store.h"
#include "tinylm/train/gpt2_metrics.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

template <class T>
T from_hex(const std::string& hex) {
  unsigned char bytes[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i)
    bytes[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  T v;
  std::memcpy(&v, bytes, sizeof(T));
  return v;
}

nlohmann::json protocol_fixture() {
  return nlohmann::json::parse(
      test::read_text(test::source_path("tests/fixtures/train/protocol.json")));
}

TEST(TrainProtocol, ReprMatchesPython) {
  const auto j = protocol_fixture();
  ASSERT_GT(j["repr"].size(), 600u);
  for (const auto& c : j["repr"]) {
    const double x = from_hex<double>(c[0]);
    EXPECT_EQ(py_repr(x), c[1].get<std::string>()) << "bits " << c[0];
  }
  EXPECT_EQ(py_repr(std::nan("")), "nan");
}

TEST(TrainProtocol, PairwiseSumsMatchPython) {
  const auto j = protocol_fixture();
  for (const auto& c : j["pairwise"]) {
    std::vector<float> v;
    for (const auto& h : c["values"]) v.push_back(from_hex<float>(h));
    EXPECT_EQ(py_repr(pairwise_sum(v)), c["sum"].get<std::string>()) << v.size() << " values";
    EXPECT_EQ(py_repr(pairwise_abs_sum(v)), c["abs_sum"].get<std::string>())
        << v.size() << " values";
  }
}

class TokenGridTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const std::string p = dir.file("tokens.json");
    test::write_text(p, text);
    return p;
  }
  static std::string grid(int rows, int cols, const std::string& cell = "1") {
    std::string s = "{\"ids\": [";
    for (int r = 0; r < rows; ++r) {
      s += r ? ", [" : "[";
      for (int c = 0; c < cols; ++c) s += (c ? ", " : "") + cell;
      s += "]";
    }
    return s + "]}";
  }
  void expect_error(const std::string& text, const std::string& fragment) {
    const std::string p = write(text);
    try {
      load_token_grid(p, 4, 65, 100);
      FAIL() << "accepted " << text.substr(0, 80);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
  test::TempDir dir;
};

TEST_F(TokenGridTest, ReadsRowMajor) {
  std::string s = "{\"ids\": [";
  for (int r = 0; r < 4; ++r) {
    s += r ? ", [" : "[";
    for (int c = 0; c < 65; ++c) s += (c ? ", " : "") + std::to_string((r * 65 + c) % 100);
    s += "]";
  }
  const auto ids = load_token_grid(write(s + "]}"), 4, 65, 100);
  ASSERT_EQ(ids.size(), 260u);
  for (int i = 0; i < 260; ++i) EXPECT_EQ(ids[static_cast<size_t>(i)], i % 100);
}

TEST_F(TokenGridTest, RejectsBadFiles) {
  expect_error(grid(3, 65), "rows");
  expect_error(grid(5, 65), "rows");
  expect_error(grid(4, 64), "row 0");
  expect_error(grid(4, 65, "1.5"), "not an integer");
  expect_error(grid(4, 65, "\"7\""), "not an integer");
  expect_error(grid(4, 65, "100"), "outside the vocabulary");
  expect_error(grid(4, 65, "-1"), "outside the vocabulary");
  expect_error(grid(4, 65, "18446744073709551615"), "outside the vocabulary");
  expect_error("{\"tokens\": []}", "\"ids\"");
  expect_error("[1, 2]", "\"ids\"");
  expect_error("{\"ids\": [", "tokens.json");
}

TEST(TrainProtocol, FingerprintsUseTheOutInLayout) {
  gpt2::Config c;
  c.vocab_size = 11;
  c.n_positions = 5;
  c.n_embd = 4;
  c.n_layer = 2;
  c.n_head = 2;
  const ParamLayout layout = gpt2::param_layout(c);
  std::vector<float> p(layout.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i % 17) - 8.0f;
  const auto fps = fingerprint_weights(c, p);
  ASSERT_EQ(fps.size(), 6u);
  EXPECT_EQ(fps[0].name, "wte.weight");
  EXPECT_EQ(fps[3].name, "h.1.attn.c_proj.weight");
  // c_attn is stored [C, 3C]; its fingerprint walks [3C, C]: first8 = column 0 then column 1.
  const ParamEntry& e = layout.at("h.0.attn.c_attn.weight");
  ASSERT_EQ(fps[1].first8.size(), 8u);
  for (int k = 0; k < 8; ++k) {
    const int o = k / 4, i = k % 4;
    EXPECT_EQ(fps[1].first8[static_cast<size_t>(k)], p[e.offset + static_cast<size_t>(i * 12 + o)]);
  }
  double sum = 0, abs_sum = 0;
  for (size_t i = 0; i < e.numel; ++i) {
    sum += p[e.offset + i];
    abs_sum += std::fabs(p[e.offset + i]);
  }
  EXPECT_EQ(fps[1].sum, sum);  // small integers: exact in any order
  EXPECT_EQ(fps[1].abs_sum, abs_sum);
}

TEST(TrainProtocol, MetricsJsonFollowsTheSchema) {
  RunMetrics m;
  m.steps = 1;
  m.batch_size = 4;
  m.seq_len = 64;
  m.lr = 1e-4;
  m.n_params = 148;
  m.initial_loss = 10.5f;
  m.records.push_back({1, 10.5f, 12.25, {Fingerprint{"wte.weight", 0.5, 1.0, {1.0f, -0.0f}}}});
  const std::string text = metrics_json(m);
  const auto j = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  // The reference schema's keys, with `devices` (the shard count) added after `device`.
  EXPECT_EQ(keys,
            (std::vector<std::string>{"device", "devices", "steps", "batch_size", "seq_len", "lr",
                                      "n_params", "initial_loss", "jit_calls", "records"}));
  EXPECT_EQ(j["device"], "CPU");
  EXPECT_EQ(j["devices"], 1);
  EXPECT_TRUE(j["jit_calls"].is_null());
  EXPECT_EQ(j["initial_loss"], "10.5");
  EXPECT_NE(text.find("\"lr\": 0.0001,"), std::string::npos);
  const auto& r = j["records"][0];
  EXPECT_EQ(r["step"], 1);
  EXPECT_EQ(r["loss"], "10.5");
  EXPECT_DOUBLE_EQ(r["ms"].get<double>(), 12.25);
  EXPECT_EQ(r["weights"]["wte.weight"]["sum"], "0.5");
  EXPECT_EQ(r["weights"]["wte.weight"]["first8"], (nlohmann::ordered_json{"1.0", "-0.0"}));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
