// The trainable families (train/family.h, each held by its record in families/): the lookup and
// its error, each family's defaults and the options only some take, the disk estimate's
// parameter width and token file, the tokenizer defaults a fresh run gets.
#include <gtest/gtest.h>

#include "test_util.h"
#include "tinylm/families/family.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/train/disk_space.h"
#include "tinylm/train/family.h"
#include "tinylm/train/run_config.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

const train::TrainFamilies& trainable() { return families::trainable(); }
const train::TrainFamily& family(const std::string& arch) { return trainable().find(arch); }
train::RunConfig defaults_for(const std::string& arch) { return defaults_for(trainable(), arch); }

TEST(TrainFamily, ListsEveryFamilyAndNamesThemWhenOneIsUnknown) {
  std::vector<std::string> names;
  for (const train::TrainFamilies::Entry& e : trainable().entries()) {
    names.emplace_back(e.name);
    EXPECT_EQ(e.family, &families::by_name(e.name)->training);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gpt2", "evermind", "microgpt"}));
  EXPECT_EQ(&family("evermind"), &families::by_name("evermind")->training);
  EXPECT_THROW(family("gpt3"), train::FlagError);
  expect_error([] { family("gpt3"); },
               {"--arch gpt3: unknown (expected gpt2, evermind or microgpt)"});
  EXPECT_EQ(trainable().names([](const train::TrainFamily& f) { return f.token_file; }),
            "gpt2 or evermind");
}

TEST(TrainFamily, DefaultsAreEachFamilysOwn) {
  const train::RunConfig gpt2 = defaults_for("gpt2"), base;
  EXPECT_EQ(train::to_json(gpt2).dump(), [&] {
    train::RunConfig c = base;
    c.arch = "gpt2";
    // The shape of the default preset, mini; its positions are the sequence.
    c.n_layer = 4;
    c.n_head = 6;
    c.n_embd = 192;
    c.block_size = 256;
    c.seq_len = 256;
    return train::to_json(c).dump();
  }());
  const train::RunConfig evermind = defaults_for("evermind");
  EXPECT_EQ(evermind.lr, 1e-3);
  EXPECT_EQ(evermind.seq_len, 128);
  const train::RunConfig microgpt = defaults_for("microgpt");
  EXPECT_EQ(microgpt.batch, 1);
  EXPECT_EQ(microgpt.seed, 42u);
  EXPECT_EQ(microgpt.schedule, "linear");
  EXPECT_THROW(defaults_for("llama"), train::FlagError);
}

TEST(TrainFamily, OptionsOnlySomeFamiliesTakeAreRefusedElsewhere) {
  const auto with = [](const std::string& arch, auto&& set) {
    train::RunConfig c = defaults_for(arch);
    c.data = {"corpus.txt"};
    set(c);
    return c;
  };
  const auto refused = [](const train::RunConfig& c, const std::string& phrase) {
    EXPECT_THROW(train::validate(trainable(), c), train::FlagError);
    expect_error([&] { train::validate(trainable(), c); }, {phrase});
  };
  // A given flag that another family takes, by the table's lists.
  const auto refused_flag = [](const std::string& arch, const nlohmann::ordered_json& given,
                               const std::string& phrase) {
    expect_error([&] { trainable().check_flags(arch, given); }, {phrase});
  };
  refused_flag("evermind", {{"dropout", 0.1}},
               "--dropout does not apply to --arch evermind (only to gpt2)");
  refused_flag("microgpt", {{"compute-dtype", "bf16"}},
               "--compute-dtype does not apply to --arch microgpt (only to gpt2)");
  refused_flag("gpt2", {{"checkpoint-activations", true}},
               "--checkpoint-activations does not apply to --arch gpt2 (only to evermind)");
  refused_flag("microgpt", {{"block-size", 8}, {"init-from", "m.safetensors"}},
               "--block-size sets a fresh model's shape; the model from --init-from has its own");
  trainable().check_flags("gpt2", {{"lr", 0.1}, {"bias", false}});
  refused(with("evermind", [](train::RunConfig& c) { c.device = "gpu"; }),
          "--device applies to --arch gpt2 only");
  refused(with("gpt2", [](train::RunConfig& c) { c.device = "tpu"; }),
          "--device tpu: cpu, gpu or gpu:N (tinylm devices lists the GPUs)");
  refused(with("gpt2", [](train::RunConfig& c) { c.device = "gpu:x"; }), "--device gpu:x: cpu");
  refused(with("gpt2", [](train::RunConfig& c) { c.device = "gpu:7"; }), "--device gpu");
  refused(with("microgpt", [](train::RunConfig& c) { c.accum = 2; }),
          "--arch microgpt trains one document per step: --batch and --accum must be 1");
  refused(with("gpt2", [](train::RunConfig& c) { c.compute = "f64"; }),
          "--compute-dtype must be f32, bf16 or f16 (got f64)");
  refused(with("microgpt", [](train::RunConfig& c) { c.n_embd = 10; }),
          "--n-embd 10 must be a multiple of --n-head 4");
  refused(with("evermind", [](train::RunConfig& c) { c.vocab_size = 100; }), "--vocab-size 100");
  // --init-from brings its own shape: the fresh model's checks do not apply.
  train::validate(trainable(), with("microgpt", [](train::RunConfig& c) {
                    c.n_embd = 10;
                    c.init_from = "model.safetensors";
                  }));
}

TEST(TrainFamily, MicrogptNeedsEightBytesPerMomentAndNoTokenFile) {
  TempDir tmp;
  write_text(tmp.file("names.txt"), "emma\nolivia\n");
  train::RunConfig c = defaults_for("microgpt");
  c.data = {tmp.file("names.txt")};
  const train::DiskNeed need = train::estimate_disk_need(family("microgpt"), c, {});
  EXPECT_EQ(need.tokens_bytes, 0u);
  ASSERT_GT(need.moment_bytes, 0u);
  // f64 parameters: the saved model is 8 bytes a parameter, the moments twice that.
  EXPECT_EQ(need.moment_bytes, 2 * (need.model_bytes - (uint64_t{4} << 20)));
}

TEST(TrainFamily, TokenizerDefaults) {
  TempDir tmp;
  train::RunConfig c = defaults_for("gpt2");
  const train::TrainFamily& gpt2 = family("gpt2");
  EXPECT_EQ(gpt2.default_tokenizer(c, stderr), families::default_vocab_dir());
  // Hugging Face weights with their vocabulary: that one.
  write_text(tmp.file("vocab.json"), "{}");
  c.init_from = tmp.path().string();
  EXPECT_EQ(gpt2.default_tokenizer(c, stderr), tmp.path().string());

  const train::TrainFamily& evermind = family("evermind");
  train::RunConfig e = defaults_for("evermind");
  EXPECT_EQ(evermind.default_tokenizer(e, stderr), "");  // trained on --data
  e.init_from = tmp.file("model.evl");
  expect_error([&] { evermind.default_tokenizer(e, stderr); },
               {"no tokenizer saved with the model", tmp.file("model.tokenizer.json")});
  write_text(tmp.file("model.tokenizer.json"), "{}");
  EXPECT_EQ(evermind.default_tokenizer(e, stderr), tmp.file("model.tokenizer.json"));

  EXPECT_EQ(family("microgpt").default_tokenizer(c, stderr), "");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
