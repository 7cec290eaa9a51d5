// Trained GPT-2 weights written back in the layout of the file they came from.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/safetensors.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

// Copies a fixture model file next to the fixture config into a temp dir.
std::string stage(const test::TempDir& dir, const std::string& file) {
  const std::string src = test::source_path("tests/fixtures/gpt2/tiny/");
  fs::copy_file(src + "config.json", dir.file("config.json"));
  fs::copy_file(src + file, dir.file(file));
  return dir.file(file);
}

void perturb(std::vector<float>& p) {
  for (size_t i = 0; i < p.size(); ++i) p[i] += 0.001f * static_cast<float>(i % 7);
}

class Gpt2SaveLike : public ::testing::TestWithParam<const char*> {};

TEST_P(Gpt2SaveLike, KeepsNamesDtypesBuffersAndRoundTrips) {
  test::TempDir dir;
  const std::string in = stage(dir, GetParam());
  checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(in);
  perturb(ck.params);
  const std::string out = dir.file("trained.safetensors");
  checkpoints::save_gpt2_weights_like(in, out, ck.config, ck.params);

  const auto a = io::SafetensorsFile::open(in), b = io::SafetensorsFile::open(out);
  ASSERT_EQ(a.entries().size(), b.entries().size());
  for (size_t i = 0; i < a.entries().size(); ++i) {
    const auto &x = a.entries()[i], &y = b.entries()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.shape, y.shape);
    if (x.name.ends_with(".attn.bias") || x.name.ends_with("masked_bias")) {
      const auto bx = a.bytes(x), by = b.bytes(y);
      EXPECT_TRUE(std::equal(bx.begin(), bx.end(), by.begin(), by.end())) << x.name;
    }
  }
  EXPECT_EQ(a.metadata(), b.metadata());

  const checkpoints::Gpt2Checkpoint back = checkpoints::load_gpt2(out, dir.file("config.json"));
  ASSERT_EQ(back.params.size(), ck.params.size());
  const io::SafetensorsEntry* wte =
      a.find("wte.weight") ? a.find("wte.weight") : a.find("transformer.wte.weight");
  ASSERT_NE(wte, nullptr);
  const bool f32 = wte->dtype == "F32";
  for (size_t i = 0; i < ck.params.size(); ++i) {
    const float want = f32 ? ck.params[i] : bf16_to_float(float_to_bf16(ck.params[i]));
    ASSERT_EQ(back.params[i], want) << "parameter " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, Gpt2SaveLike,
                         ::testing::Values("model.safetensors", "model_bf16.safetensors",
                                           "model_prefixed.safetensors"));

TEST(Gpt2SaveLike, RejectsAFileWithoutTheModel) {
  test::TempDir dir;
  const std::string in = stage(dir, "model.safetensors");
  checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(in);
  const std::string other =
      test::source_path("tests/fixtures/gpt2/tiny/expected_logits.safetensors");
  EXPECT_THROW(
      checkpoints::save_gpt2_weights_like(other, dir.file("x.safetensors"), ck.config, ck.params),
      Error);
  EXPECT_FALSE(fs::exists(dir.file("x.safetensors")));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
