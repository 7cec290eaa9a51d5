// The README's promise, through the CLI: inference with f32 activations prints the same bytes at
// every kernel level this machine has (TINYLM_ISA=generic, avx2, avx512 as `tinylm --version`
// lists them). Perplexity scores every row of its windows, so the output head runs over many
// rows at once; generate runs prefill and then decode.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

// The levels named by `tinylm --version`'s line "kernels: X (supported: a b c)".
std::vector<std::string> supported_levels() {
  const test::CommandResult v = test::run_cli("--version");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  const std::string key = "(supported: ";
  const size_t at = v.out.find(key);
  const size_t end = v.out.find(')', at);
  if (at == std::string::npos || end == std::string::npos) {
    ADD_FAILURE() << "no supported levels in: " << v.out;
    return {};
  }
  std::istringstream names(v.out.substr(at + key.size(), end - at - key.size()));
  std::vector<std::string> levels;
  for (std::string name; names >> name;) levels.push_back(name);
  return levels;
}

// Runs `tinylm args` at every supported level and expects the first level's stdout from each.
void expect_same_stdout_at_every_level(const std::string& args) {
  const std::vector<std::string> levels = supported_levels();
  ASSERT_FALSE(levels.empty());
  std::string first;
  for (const std::string& level : levels) {
    const test::CommandResult r =
        test::run_shell("TINYLM_ISA=" + level + " " + std::string(TINYLM_CLI_PATH) + " " + args);
    ASSERT_EQ(r.exit_code, 0) << level << ": " << r.err;
    ASSERT_FALSE(r.out.empty()) << level;
    if (level == levels.front()) {
      first = r.out;
      continue;
    }
    EXPECT_EQ(r.out, first) << "TINYLM_ISA=" << level << " differs from " << levels.front()
                            << ": tinylm " << args;
  }
}

class SameBitsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const test::CommandResult init =
        test::run_cli("init --arch gpt2 --preset small-test --seed 5 --out " + model() +
                      " --tokenizer " + test::source_path("data/gpt2"));
    ASSERT_EQ(init.exit_code, 0) << init.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string model() { return dir_->file("m"); }
  static test::TempDir* dir_;
};
test::TempDir* SameBitsCli::dir_ = nullptr;

// Windows of 64 rows, every row scored (--stride = --context): on the main of issue 35 the f32
// head of 32 rows or more went to oneDNN, and generic printed another perplexity.
TEST_F(SameBitsCli, PerplexityPrintsTheSameBytesAtEveryLevel) {
  const std::string text = test::source_path("data/tinyshakespeare.txt");
  expect_same_stdout_at_every_level("perplexity --model " + model() + " --file " + text +
                                    " --limit 200 --context 64 --stride 64 --threads 2");
  // The default stride: half of each window after the first is scored.
  expect_same_stdout_at_every_level("perplexity --model " + model() + " --file " + text +
                                    " --limit 200 --context 96 --threads 2");
}

TEST_F(SameBitsCli, GeneratePrintsTheSameBytesAtEveryLevel) {
  const std::string prompt = " --prompt 'First Citizen: Before we proceed any further, hear me'";
  expect_same_stdout_at_every_level("generate --model " + model() + prompt +
                                    " --max-tokens 12 --threads 2");
  expect_same_stdout_at_every_level("generate --model " + model() + prompt +
                                    " --max-tokens 12 --temperature 1 --seed 7 --threads 2");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
