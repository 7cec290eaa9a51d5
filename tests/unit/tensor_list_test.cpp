// Each family's one tensor list (models/*/tensors.h) against what reads it: the layout it
// builds, the offsets it fills, and (GPT-2) the GGUF names and Conv1D flags.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tinylm/models/evermind/tensors.h"
#include "tinylm/models/gpt2/tensors.h"
#include "tinylm/models/microgpt/tensors.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

TEST(Gpt2Tensors, ListGivesLayoutOffsetsAndGgufNames) {
  gpt2::Config c = gpt2::preset("small-test");
  c.n_inner = 96;
  const ParamLayout layout = gpt2::param_layout(c);
  const std::vector<gpt2::TensorSpec> specs = gpt2::tensor_specs(c);
  ASSERT_EQ(specs.size(), layout.entries().size());
  ASSERT_EQ(specs.size(), 4 + 12 * static_cast<size_t>(c.n_layer));
  std::set<std::string> gguf;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamEntry& e = layout.entries()[i];
    EXPECT_EQ(specs[i].name, e.name);
    EXPECT_EQ(specs[i].shape, e.shape);
    EXPECT_EQ(specs[i].role, e.role);
    EXPECT_EQ(specs[i].conv1d, e.shape.size() == 2 && e.name.starts_with("h.")) << e.name;
    EXPECT_EQ(specs[i].matrix, specs[i].conv1d || e.name == "wte.weight") << e.name;
    EXPECT_TRUE(gguf.insert(specs[i].gguf).second) << specs[i].gguf;
  }
  EXPECT_EQ(specs[2].gguf, "blk.0.attn_norm.weight");
  EXPECT_EQ(specs[specs.size() - 4].gguf, "blk.1.ffn_down.weight");
  EXPECT_EQ(layout.at("h.1.mlp.c_fc.weight").shape, (Shape{64, 96}));

  const gpt2::Offsets at = gpt2::param_offsets(c);
  EXPECT_EQ(at.wte, layout.at("wte.weight").offset);
  EXPECT_EQ(at.wpe, layout.at("wpe.weight").offset);
  EXPECT_EQ(at.layers[1].attn_w, layout.at("h.1.attn.c_attn.weight").offset);
  EXPECT_EQ(at.layers[1].fc_proj_b, layout.at("h.1.mlp.c_proj.bias").offset);
  EXPECT_EQ(at.lnf_b, layout.at("ln_f.bias").offset);
}

TEST(EvermindTensors, ListGivesLayoutAndOffsets) {
  evermind::Config c;
  c.vocab_size = 40;
  c.n_experts = 3;
  const ParamLayout layout = evermind::param_layout(c);
  EXPECT_EQ(layout.size(), static_cast<size_t>(evermind::param_count(c)));
  const evermind::ParamIndex index(c);
  EXPECT_EQ(index.emb, layout.at("emb").offset);
  ASSERT_EQ(index.layers.size(), 2u);
  EXPECT_EQ(index.layers[1].moe_norm, layout.at("layers.1.moe_norm").offset);
  EXPECT_EQ(index.layers[1].shared_down, layout.at("layers.1.shared.down").offset);
  EXPECT_EQ(index.layers[1].expert_down[2], layout.at("layers.1.experts.2.down").offset);
  EXPECT_EQ(layout.entries().back().name, "layers.1.experts.2.down");
}

TEST(MicrogptTensors, ListGivesLayoutAndOffsets) {
  microgpt::Config c;
  c.n_layer = 2;
  const ParamLayout layout = microgpt::param_layout(c);
  const microgpt::ParamIndex index = microgpt::param_offsets(c);
  EXPECT_EQ(index.lm_head, layout.at("lm_head").offset);
  ASSERT_EQ(index.layers.size(), 2u);
  EXPECT_EQ(index.layers[1].wv, layout.at("layer1.attn_wv").offset);
  EXPECT_EQ(index.layers[1].fc2, layout.at("layer1.mlp_fc2").offset);
  EXPECT_EQ(layout.at("layer1.mlp_fc1").shape, (Shape{64, 16}));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
