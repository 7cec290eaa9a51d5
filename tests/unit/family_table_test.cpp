// The family table (families/): every record is found by its name, a bundled model file picks
// its record, and --arch's accepted values are the table's.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "test_util.h"
#include "tinylm/families/family.h"
#include "tinylm/io/gguf.h"
#include "tinylm/train/family.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

TEST(FamilyTable, EveryRecordIsFoundByItsName) {
  std::set<std::string_view> seen;
  for (const families::Family* f : families::all()) {
    EXPECT_TRUE(seen.insert(f->name).second) << f->name;
    EXPECT_EQ(families::by_name(f->name), f);
    EXPECT_FALSE(f->title.empty()) << f->name;
    EXPECT_FALSE(f->expected.empty()) << f->name;
    ASSERT_NE(f->recognise, nullptr) << f->name;
    EXPECT_EQ(f->load_tokenizer == nullptr, f->load_decoder == nullptr) << f->name;
    // Every family trains, under its own name.
    EXPECT_TRUE(families::trains(*f)) << f->name;
    EXPECT_EQ(&families::trainable().find(f->name), &f->training);
  }
  EXPECT_EQ(families::trainable().entries().size(), families::all().size());
  EXPECT_EQ(families::all().size(), 3u);
  EXPECT_EQ(families::by_name("llama"), nullptr);
  EXPECT_EQ(families::by_name(""), nullptr);
  const std::vector<const families::Family*> decoding = families::those(families::decodes);
  const std::vector<std::string> every = {"gpt2", "evermind", "microgpt"};
  EXPECT_EQ(families::names(decoding), every);
  EXPECT_EQ(families::names_text(decoding), "gpt2 or evermind or microgpt");
  EXPECT_EQ(families::names(families::those(families::scores_perplexity)), every);
}

// The name of the family `path` is detected as ("" for none), with the words for it.
std::pair<std::string, std::string> detected(const std::string& path) {
  const families::Detected d = families::detect(path);
  return {d.family ? std::string(d.family->name) : "", d.what};
}

TEST(FamilyTable, BundledModelFilesPickTheirRecord) {
  const std::string tiny = test::source_path("tests/fixtures/gpt2/tiny");
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(detected(tiny), (P{"gpt2", "a GPT-2 model directory"}));
  EXPECT_EQ(detected(tiny + "/config.json"), (P{"gpt2", "a GPT-2 model directory"}));
  EXPECT_EQ(detected(tiny + "/model.safetensors"), (P{"gpt2", "GPT-2 weights (safetensors)"}));
  EXPECT_EQ(detected(test::source_path("tests/fixtures/gguf/tiny_q8_0.gguf")),
            (P{"gpt2", "a GPT-2 GGUF file"}));
  EXPECT_EQ(detected(test::source_path("tests/fixtures/evl/tiny_f32.evl")),
            (P{"evermind", "an EvermindLM checkpoint (EVL0)"}));

  test::TempDir dir;
  const test::CommandResult micro =
      test::run_cli("microgpt --steps 1 --samples 0 --save " + dir.file("micro.safetensors"));
  ASSERT_EQ(micro.exit_code, 0) << micro.err;
  EXPECT_EQ(detected(dir.file("micro.safetensors")),
            (P{"microgpt", "a microgpt checkpoint (safetensors)"}));
  // A directory's lone model.safetensors: microgpt's is found, GPT-2's needs its config.json.
  fs::create_directories(dir.file("m"));
  fs::copy_file(dir.file("micro.safetensors"), dir.file("m/model.safetensors"));
  EXPECT_EQ(detected(dir.file("m")).first, "microgpt");
  fs::create_directories(dir.file("g"));
  fs::copy_file(tiny + "/model.safetensors", dir.file("g/model.safetensors"));
  EXPECT_EQ(detected(dir.file("g")), (P{"", "a directory without a model tinylm knows"}));
  EXPECT_EQ(families::detect(dir.file("g")).path, dir.file("g"));

  // A GGUF of another architecture is no family's, and says which it is.
  io::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.write(dir.file("llama.gguf"));
  const families::Detected llama = families::detect(dir.file("llama.gguf"));
  EXPECT_EQ(llama.family, nullptr);
  EXPECT_TRUE(llama.foreign);
  EXPECT_EQ(llama.what, "a GGUF model of architecture 'llama'");
  test::write_text(dir.file("junk.bin"), "not a model at all, not at all");
  EXPECT_EQ(detected(dir.file("junk.bin")), (P{"", "not a model file tinylm knows"}));
  EXPECT_EQ(families::detect(dir.file("nothing")).format, checkpoints::Format::missing);
}

TEST(FamilyTable, AnUnknownArchNamesTheAcceptedOnes) {
  const std::string tiny = test::source_path("tests/fixtures/gpt2/tiny");
  for (const char* command : {"generate", "serve"}) {
    const test::CommandResult r =
        test::run_cli(std::string(command) + " --arch llama --model " + tiny);
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_NE(r.err.find("llama"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("gpt2"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("evermind"), std::string::npos) << r.err;
    const test::CommandResult help = test::run_cli(std::string(command) + " --help");
    EXPECT_NE(help.out.find("gpt2 or evermind"), std::string::npos) << help.out;
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
