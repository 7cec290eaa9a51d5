// microgpt checkpoints: save/load round trips bit for bit; every inconsistent or damaged
// checkpoint is an Error naming the file.
#include "tinylm/checkpoints/microgpt_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/models/microgpt/model.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using checkpoints::load_microgpt;
using checkpoints::save_microgpt;
using test::expect_error;

const std::string kChars = "abc\xc3\xa9";  // a, b, c, é: vocab_size 5 with BOS

microgpt::Config small_config() {
  microgpt::Config c;
  c.vocab_size = 5;
  c.n_embd = 8;
  c.n_head = 2;
  c.n_layer = 2;
  c.block_size = 4;
  return c;
}

// A model whose parameters are all distinct, including values a text format would mangle.
std::unique_ptr<microgpt::Model> distinct_model(const microgpt::Config& c) {
  auto model = microgpt::make_model(c, microgpt::Engine::tensor);
  const std::span<double> p = model->params();
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = 0.08 * std::sin(0.37 * static_cast<double>(i) + 0.11) + 1e-3 * i;
  p[0] = -0.0;
  p[1] = std::numeric_limits<double>::denorm_min();
  p[2] = std::nextafter(1.0, 2.0);
  p[3] = -std::numeric_limits<double>::max();
  return model;
}

bool same_bits(std::span<const double> a, std::span<const double> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// A checkpoint's content, editable before it is written back with write_safetensors.
struct Contents {
  struct Tensor {
    std::string name, dtype;
    Shape shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;

  static Contents read(const std::string& path) {
    const io::SafetensorsFile f = io::SafetensorsFile::open(path);
    Contents c;
    c.metadata = f.metadata();
    for (const io::SafetensorsEntry& e : f.entries()) {
      const auto b = f.bytes(e);
      c.tensors.push_back({e.name, e.dtype, e.shape, {b.begin(), b.end()}});
    }
    return c;
  }
  void write(const std::string& path) const {
    std::vector<io::SafetensorsWriteEntry> entries;
    for (const Tensor& t : tensors) entries.push_back({t.name, t.dtype, t.shape, t.bytes});
    io::write_safetensors(path, entries, metadata);
  }
  Tensor& tensor(const std::string& name) {
    for (Tensor& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("test: no tensor " + name);
  }
  void erase(const std::string& name) {
    std::erase_if(tensors, [&](const Tensor& t) { return t.name == name; });
  }
};

class MicrogptCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = dir_.file("good.safetensors");
    model_ = distinct_model(small_config());
    save_microgpt(good_, *model_, CharTokenizer::from_chars(kChars));
  }
  // Writes the good checkpoint, edited by `edit`, to a new file and returns its path.
  std::string edited(const std::function<void(Contents&)>& edit) {
    Contents c = Contents::read(good_);
    edit(c);
    const std::string path = dir_.file("edited" + std::to_string(n_++) + ".safetensors");
    c.write(path);
    return path;
  }
  // load_microgpt(path) must fail naming the file and each phrase.
  void expect_load_error(const std::string& path, std::initializer_list<std::string> phrases) {
    SCOPED_TRACE(path);
    std::vector<std::string> all = {path};
    all.insert(all.end(), phrases.begin(), phrases.end());
    expect_error([&] { load_microgpt(path); }, all);
  }

  test::TempDir dir_;
  std::string good_;
  std::unique_ptr<microgpt::Model> model_;
  int n_ = 0;
};

TEST_F(MicrogptCheckpoint, RoundTripsBitForBit) {
  const checkpoints::MicrogptCheckpoint ck = load_microgpt(good_);
  const microgpt::Config c = small_config();
  EXPECT_EQ(ck.config.vocab_size, c.vocab_size);
  EXPECT_EQ(ck.config.n_embd, c.n_embd);
  EXPECT_EQ(ck.config.n_head, c.n_head);
  EXPECT_EQ(ck.config.n_layer, c.n_layer);
  EXPECT_EQ(ck.config.block_size, c.block_size);
  EXPECT_EQ(ck.chars, kChars);
  EXPECT_TRUE(same_bits(ck.params, model_->params()));
  EXPECT_TRUE(std::signbit(ck.params[0]));

  // The loaded parameters give the same model.
  auto again = microgpt::make_model(ck.config, microgpt::Engine::tensor);
  std::copy(ck.params.begin(), ck.params.end(), again->params().begin());
  const std::vector<int> tokens = {4, 0, 1, 3, 4};
  EXPECT_EQ(again->loss(tokens), model_->loss(tokens));
}

TEST_F(MicrogptCheckpoint, FileIsPlainSafetensors) {
  const io::SafetensorsFile f = io::SafetensorsFile::open(good_);
  EXPECT_EQ(f.metadata().at("format"), "tinylm-microgpt-1");
  EXPECT_EQ(f.metadata().at("vocab_size"), "5");
  EXPECT_EQ(f.metadata().at("chars"), kChars);
  const ParamLayout layout = microgpt::param_layout(small_config());
  ASSERT_EQ(f.entries().size(), layout.entries().size());
  for (const ParamEntry& e : layout.entries()) {
    const io::SafetensorsEntry* t = f.find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t->dtype, "F64");
    EXPECT_EQ(t->shape, e.shape);
  }
}

TEST_F(MicrogptCheckpoint, SavingAgainReplacesTheFile) {
  auto other = distinct_model(small_config());
  other->params()[5] = 42.0;
  save_microgpt(good_, *other, CharTokenizer::from_chars(kChars));
  EXPECT_EQ(load_microgpt(good_).params[5], 42.0);
}

TEST_F(MicrogptCheckpoint, RoundTripsOneLayerAsciiVocabulary) {
  microgpt::Config c;
  c.vocab_size = 27;
  c.n_embd = 4;
  c.n_head = 4;
  c.n_layer = 1;
  c.block_size = 2;
  const auto m = distinct_model(c);
  const std::string path = dir_.file("ascii.safetensors");
  save_microgpt(path, *m, CharTokenizer::from_chars("zyxwvutsrqponmlkjihgfedcba"));
  const checkpoints::MicrogptCheckpoint ck = load_microgpt(path);
  EXPECT_EQ(ck.chars, "abcdefghijklmnopqrstuvwxyz");
  EXPECT_EQ(ck.config.vocab_size, 27);
  EXPECT_TRUE(same_bits(ck.params, m->params()));
}

TEST_F(MicrogptCheckpoint, MissingFormatMetadata) {
  expect_load_error(edited([](Contents& c) { c.metadata.erase("format"); }),
                    {"not a tinylm microgpt checkpoint"});
  expect_load_error(edited([](Contents& c) { c.metadata["format"] = "tinylm-microgpt-2"; }),
                    {"not a tinylm microgpt checkpoint"});
  expect_load_error(edited([](Contents& c) { c.metadata.clear(); }),
                    {"not a tinylm microgpt checkpoint"});
}

TEST_F(MicrogptCheckpoint, PlainSafetensorsWithoutMetadata) {
  const std::string path = dir_.file("plain.safetensors");
  const std::vector<double> w = {1, 2};
  const std::vector<io::SafetensorsWriteEntry> t = {
      {"wte", "F64", {1, 2}, std::as_bytes(std::span(w))}};
  io::write_safetensors(path, t, {});
  expect_load_error(path, {"not a tinylm microgpt checkpoint"});
}

TEST_F(MicrogptCheckpoint, MissingTensor) {
  expect_load_error(edited([](Contents& c) { c.erase("layer1.mlp_fc2"); }),
                    {"missing tensor layer1.mlp_fc2"});
  expect_load_error(edited([](Contents& c) { c.erase("wte"); }), {"missing tensor wte"});
}

TEST_F(MicrogptCheckpoint, ExtraTensor) {
  expect_load_error(
      edited([](Contents& c) {
        c.tensors.push_back({"layer2.attn_wq", "F64", {1}, std::vector<std::byte>(8)});
      }),
      {"holds 16 tensors", "has 15"});
}

TEST_F(MicrogptCheckpoint, WrongShape) {
  // Same bytes, transposed shape.
  expect_load_error(edited([](Contents& c) {
                      c.tensor("wte").shape = {8, 5};
                    }),
                    {"tensor wte", "shape [8, 5], expected [5, 8]"});
  expect_load_error(edited([](Contents& c) { c.tensor("layer0.mlp_fc1").shape = {256}; }),
                    {"tensor layer0.mlp_fc1", "expected [32, 8]"});
}

TEST_F(MicrogptCheckpoint, NonFloatTensor) {
  expect_load_error(edited([](Contents& c) { c.tensor("wpe").dtype = "I64"; }),
                    {"tensor wpe", "dtype I64"});
}

TEST_F(MicrogptCheckpoint, VocabSizeInconsistentWithChars) {
  expect_load_error(edited([](Contents& c) { c.metadata["vocab_size"] = "6"; }),
                    {"chars give a vocabulary of 5 but vocab_size is 6"});
  expect_load_error(edited([](Contents& c) { c.metadata["chars"] = "ab"; }),
                    {"chars give a vocabulary of 3 but vocab_size is 5"});
  // Repeated characters count once.
  expect_load_error(edited([](Contents& c) { c.metadata["chars"] = "aabbcc"; }),
                    {"chars give a vocabulary of 4 but vocab_size is 5"});
}

TEST_F(MicrogptCheckpoint, NonIntegerMetadata) {
  for (const char* bad : {"8.0", "eight", "", " 8", "8 ", "+8", "0x8", "99999999999"}) {
    SCOPED_TRACE(bad);
    expect_load_error(edited([&](Contents& c) { c.metadata["n_embd"] = bad; }),
                      {"metadata 'n_embd' is not an integer: '" + std::string(bad) + "'"});
  }
  expect_load_error(edited([](Contents& c) { c.metadata.erase("block_size"); }),
                    {"metadata has no 'block_size'"});
}

TEST_F(MicrogptCheckpoint, InvalidConfigInMetadata) {
  expect_load_error(edited([](Contents& c) { c.metadata["n_head"] = "3"; }),
                    {"n_embd (8) must be divisible by n_head (3)"});
  expect_load_error(edited([](Contents& c) { c.metadata["n_layer"] = "0"; }),
                    {"n_layer must be positive"});
  expect_load_error(edited([](Contents& c) { c.metadata["block_size"] = "-4"; }),
                    {"block_size must be positive"});
}

TEST_F(MicrogptCheckpoint, TruncatedFile) {
  const std::string full = test::read_text(good_);
  for (size_t cut :
       {size_t{0}, size_t{4}, size_t{8}, size_t{100}, full.size() / 2, full.size() - 1}) {
    const std::string path = dir_.file("cut" + std::to_string(cut) + ".safetensors");
    test::write_text(path, full.substr(0, cut));
    expect_load_error(path, {});
  }
}

TEST_F(MicrogptCheckpoint, NonexistentPath) {
  const std::string path = dir_.file("does-not-exist.safetensors");
  expect_load_error(path, {"cannot open"});
}

TEST_F(MicrogptCheckpoint, SaveIntoNonexistentDirectory) {
  const std::string path = dir_.file("missing/dir/model.safetensors");
  expect_error([&] { save_microgpt(path, *model_, CharTokenizer::from_chars(kChars)); },
               {path, "cannot write"});
}

TEST_F(MicrogptCheckpoint, MissingCharsMetadata) {
  expect_load_error(edited([](Contents& c) { c.metadata.erase("chars"); }),
                    {"metadata has no 'chars'"});
}

// A tiny file claiming a huge (but valid) configuration: 16 layers of n_embd 65536 would be
// ~6.6 TB of parameters. It must fail on its tensors' shapes before anything is allocated.
TEST_F(MicrogptCheckpoint, HugeConfigurationInTinyFile) {
  expect_load_error(edited([](Contents& c) {
                      c.metadata["n_embd"] = "65536";
                      c.metadata["n_head"] = "1";
                      c.metadata["n_layer"] = "16";
                      c.metadata["block_size"] = "65536";
                    }),
                    {"tensor wte", "expected [5, 65536]"});
  expect_load_error(edited([](Contents& c) { c.metadata["n_layer"] = "3"; }),
                    {"missing tensor layer2.attn_wq"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
