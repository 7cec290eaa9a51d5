// The EvermindLM subcommands end to end: train (tokenizer trained on the way) -> generate ->
// continue training -> delta export/apply, and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::run_cli;

class CliEvermind : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    // 20 KB of Shakespeare, a small model: a couple of seconds under the sanitizers.
    const std::string text =
        test::read_text(test::source_path("data/tinyshakespeare.txt")).substr(0, 20000);
    test::write_text(file("corpus.txt"), text);
    trained_ = new test::CommandResult(
        run_cli("train --arch evermind --data " + file("corpus.txt") +
                " --vocab-size 300 --seq-len 32 --d-model 16 --steps 30 --seed 5"
                " --threads 1 --out " +
                file("run")));
  }
  static void TearDownTestSuite() {
    delete trained_;
    delete dir_;
  }
  static std::string file(const std::string& name) { return dir_->file(name); }
  // The trained model and its tokenizer, where the run's last checkpoint keeps them.
  static std::string model() { return file("run/latest/model.evl"); }
  static std::string tokenizer() { return file("run/latest/model.tokenizer.json"); }
  static test::TempDir* dir_;
  static test::CommandResult* trained_;
};
test::TempDir* CliEvermind::dir_ = nullptr;
test::CommandResult* CliEvermind::trained_ = nullptr;

void expect_one_line_error(const test::CommandResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST_F(CliEvermind, TrainWritesCheckpointAndTokenizer) {
  ASSERT_EQ(trained_->exit_code, 0) << trained_->err;
  EXPECT_TRUE(std::filesystem::exists(model()));
  EXPECT_TRUE(std::filesystem::exists(tokenizer()));
  EXPECT_NE(trained_->out.find("trained 30 steps"), std::string::npos) << trained_->out;
  EXPECT_NE(trained_->err.find("tok/s"), std::string::npos);
}

TEST_F(CliEvermind, GenerateIsDeterministic) {
  ASSERT_EQ(trained_->exit_code, 0) << trained_->err;
  const std::string args =
      "generate --arch evermind --model " + model() + " --prompt 'First' --max-tokens 20";
  const test::CommandResult a = run_cli(args), b = run_cli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.rfind("First", 0), 0u) << a.out;
  EXPECT_GT(a.out.size(), 6u);
  const test::CommandResult s1 = run_cli(args + " --temperature 1 --seed 1");
  const test::CommandResult s2 = run_cli(args + " --temperature 1 --seed 1");
  EXPECT_EQ(s1.out, s2.out);
}

TEST_F(CliEvermind, DeltaRoundTripIsExactAndChecksTheBase) {
  ASSERT_EQ(trained_->exit_code, 0) << trained_->err;
  const test::CommandResult more =
      run_cli("train --arch evermind --data " + file("corpus.txt") + " --tokenizer " + tokenizer() +
              " --init-from " + model() + " --seq-len 32 --steps 5 --lr 1e-4 --threads 1 --out " +
              file("run2"));
  ASSERT_EQ(more.exit_code, 0) << more.err;
  std::filesystem::copy_file(file("run/latest/model.evl"), file("m.evl"));
  std::filesystem::copy_file(tokenizer(), file("m.tokenizer.json"));
  std::filesystem::copy_file(file("run2/latest/model.evl"), file("m2.evl"));
  const test::CommandResult ex = run_cli("delta export --base " + file("m.evl") + " --model " +
                                         file("m2.evl") + " --eps 0 --out " + file("d.evd"));
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const test::CommandResult ap = run_cli("delta apply --base " + file("m.evl") + " --delta " +
                                         file("d.evd") + " --out " + file("m3.evl"));
  ASSERT_EQ(ap.exit_code, 0) << ap.err;
  EXPECT_EQ(test::read_text(file("m2.evl")), test::read_text(file("m3.evl")));
  // The written checkpoint has the base's tokenizer beside it, so generate runs it as it is.
  EXPECT_EQ(test::read_text(file("m3.tokenizer.json")), test::read_text(tokenizer()));
  const test::CommandResult gen =
      run_cli("generate --model " + file("m3.evl") + " --prompt First --max-tokens 5");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(gen.out.rfind("First", 0), 0u) << gen.out;
  // A larger eps keeps fewer rows.
  const test::CommandResult sparse =
      run_cli("delta export --base " + file("m.evl") + " --model " + file("m2.evl") +
              " --eps 0.01 --out " + file("d2.evd"));
  ASSERT_EQ(sparse.exit_code, 0) << sparse.err;
  EXPECT_LT(std::filesystem::file_size(file("d2.evd")), std::filesystem::file_size(file("d.evd")));
  expect_one_line_error(run_cli("delta apply --base " + file("m2.evl") + " --delta " +
                                file("d.evd") + " --out " + file("x.evl")),
                        "base");
  EXPECT_FALSE(std::filesystem::exists(file("x.evl")));
}

TEST_F(CliEvermind, PerplexityScoresEveryTokenOnce) {
  ASSERT_EQ(trained_->exit_code, 0) << trained_->err;
  test::write_text(file("small.txt"), test::read_text(file("corpus.txt")).substr(0, 3000));
  const std::string args = "perplexity --model " + model() + " --file " + file("small.txt");
  const test::CommandResult a = run_cli(args + " --context 64");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  long long tokens = 0, scored = 0;
  double nll = 0, ppl = 0;
  ASSERT_EQ(std::sscanf(a.out.c_str(), "tokens %lld, scored %lld, mean NLL %lf, perplexity %lf",
                        &tokens, &scored, &nll, &ppl),
            4)
      << a.out;
  EXPECT_GT(tokens, 100);
  EXPECT_EQ(scored, tokens - 1);
  EXPECT_NEAR(ppl, std::exp(nll), 1e-3 * ppl);
  EXPECT_NE(a.err.find("context 64, stride 32"), std::string::npos) << a.err;
  // The same text again: the same bytes.
  EXPECT_EQ(run_cli(args + " --context 64").out, a.out);
  // Windows without overlap: each window's first token is only context (Hugging Face's
  // convention at stride == context), so one token fewer is scored a window after the first.
  const test::CommandResult b = run_cli(args + " --context 64 --stride 64");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  long long b_tokens = 0, b_scored = 0;
  ASSERT_EQ(std::sscanf(b.out.c_str(), "tokens %lld, scored %lld,", &b_tokens, &b_scored), 2);
  EXPECT_EQ(b_tokens, tokens);
  ASSERT_NE(tokens % 64, 1);  // else the last window would be one token, scoring nothing
  EXPECT_EQ(b_scored, tokens - (tokens + 63) / 64);
  EXPECT_NE(b.out, a.out);
}

// Exit 1 with `error` as the last line of stderr (after the load line, when the model had to be
// read to know its vocabulary), and nothing on stdout.
void expect_error_last(const test::CommandResult& r, const std::string& error) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  const size_t at = r.err.rfind('\n', r.err.size() - 2);
  const std::string last = r.err.substr(at == std::string::npos ? 0 : at + 1);
  EXPECT_EQ(last.rfind("tinylm: error: ", 0), 0u) << r.err;
  EXPECT_NE(last.find(error), std::string::npos) << r.err;
}

// A tokenizer with ids the model has no row for is refused wherever it meets the model.
TEST_F(CliEvermind, TokenizerLargerThanTheModelIsRefused) {
  ASSERT_EQ(trained_->exit_code, 0) << trained_->err;
  const std::string gpt2 = test::source_path("data/gpt2");
  const std::string with = " --model " + model() + " --tokenizer " + gpt2;
  const std::string sizes = ": the tokenizer has 50257 ids, more than the model's vocabulary of ";
  for (const std::string& command :
       {"generate" + with + " --prompt First",
        "perplexity" + with + " --file " + file("corpus.txt"), "serve" + with + " --port 0"}) {
    SCOPED_TRACE(command);
    expect_error_last(run_cli(command), gpt2 + sizes);
  }
  // Fewer ids than the model's rows is fine: another run's vocabulary of 280.
  const test::CommandResult small =
      run_cli("train --arch evermind --data " + file("corpus.txt") +
              " --vocab-size 280 --seq-len 32 --d-model 16 --steps 1 --threads 1 --out " +
              file("small-vocab"));
  ASSERT_EQ(small.exit_code, 0) << small.err;
  const test::CommandResult fewer =
      run_cli("generate --model " + model() + " --tokenizer " + file("small-vocab/tokenizer.json") +
              " --prompt First --max-tokens 4");
  EXPECT_EQ(fewer.exit_code, 0) << fewer.err;
  EXPECT_EQ(fewer.out.rfind("First", 0), 0u) << fewer.out;
  expect_error_last(run_cli("train --arch evermind --data " + file("corpus.txt") + " --tokenizer " +
                            gpt2 + " --init-from " + model() +
                            " --seq-len 32 --steps 1 --threads 1 --out " + file("big")),
                    "50257 tokens, more than the model's vocabulary of ");
}

TEST_F(CliEvermind, BadInputsAreOneLineErrors) {
  ASSERT_EQ(trained_->exit_code, 0) << trained_->err;
  std::string bytes = test::read_text(model());
  bytes[bytes.size() / 2] ^= 0x40;
  test::write_text(file("bad.evl"), bytes);
  expect_one_line_error(run_cli("generate --arch evermind --model " + file("bad.evl") +
                                " --tokenizer " + tokenizer() + " --prompt x"),
                        "bad.evl");
  expect_one_line_error(
      run_cli("train --arch gpt3 --data " + file("corpus.txt") + " --out " + file("g")), "--arch");
  expect_one_line_error(
      run_cli("train --arch evermind --data " + file("missing.txt") + " --out " + file("g")),
      "missing.txt");
  expect_one_line_error(run_cli("train --arch evermind --data " + file("corpus.txt") +
                                " --top-k 9 --out " + file("g") + " --tokenizer " + tokenizer()),
                        "top_k");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
