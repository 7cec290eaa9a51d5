// microgpt through the commands every family shares: generate samples what `tinylm microgpt
// --load` samples (the same names for the same seed), from a saved model or a run directory,
// perplexity scores a list of names, and `microgpt --load` takes a run directory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/checkpoints/microgpt_checkpoint.h"
#include "tinylm/tokenizers/char_tokenizer.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::run_cli;

class CliMicrogptDecode : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    saved_ = new test::CommandResult(
        run_cli("microgpt --steps 40 --samples 0 --seed 3 --save " + file("m.safetensors")));
  }
  static void TearDownTestSuite() {
    delete saved_;
    delete dir_;
  }
  static std::string file(const std::string& name) { return dir_->file(name); }
  // `perplexity` of the saved model over a file `name` holding `text`.
  static test::CommandResult perplexity(const std::string& name, const std::string& text) {
    test::write_text(file(name), text);
    return run_cli("perplexity --model " + file("m.safetensors") + " --file " + file(name));
  }
  static test::TempDir* dir_;
  static test::CommandResult* saved_;
};
test::TempDir* CliMicrogptDecode::dir_ = nullptr;
test::CommandResult* CliMicrogptDecode::saved_ = nullptr;

// The names `tinylm microgpt` printed ("sample  1: anna" -> "anna").
std::vector<std::string> sampled_names(const std::string& out) {
  std::vector<std::string> names;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("sample ", 0) == 0) names.push_back(line.substr(line.find(": ") + 2));
  }
  return names;
}

// The first name `microgpt --load MODEL --seed SEED` samples.
std::string first_name(const std::string& model, int seed, const std::string& extra = "") {
  const test::CommandResult r =
      run_cli("microgpt --load " + model + " --samples 1 --seed " + std::to_string(seed) + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> names = sampled_names(r.out);
  EXPECT_EQ(names.size(), 1u) << r.out;
  return names.empty() ? "" : names[0];
}

// serve puts BOS before the prompt as generate does: an empty prompt with seed S is the name
// `microgpt --load --seed S` samples first.
TEST_F(CliMicrogptDecode, ServeSamplesWhatMicrogptLoadSamples) {
  ASSERT_EQ(saved_->exit_code, 0) << saved_->err;
  if (test::run_shell("command -v curl").exit_code != 0) GTEST_SKIP() << "no curl";
  const std::string m = file("m.safetensors"), err = file("serve.err");
  for (const int seed : {1, 7, 42}) {
    test::write_text(file("req" + std::to_string(seed) + ".json"),
                     R"({"prompt": "", "temperature": 0.5, "max_tokens": 16, "seed": )" +
                         std::to_string(seed) + "}");
  }
  const test::CommandResult r = test::run_shell(test::serve_then(
      std::string(TINYLM_CLI_PATH) + " serve --model " + m + " --port 0 --threads 1", err,
      "for s in 1 7 42; do curl -s localhost:$port/v1/completions -d @" + file("req") +
          "$s.json; echo; done"));
  ASSERT_EQ(r.exit_code, 0) << test::read_text(err);
  std::istringstream lines(r.out);
  for (const int seed : {1, 7, 42}) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["choices"][0]["text"], first_name(m, seed)) << "seed " << seed << ": " << line;
  }
}

TEST_F(CliMicrogptDecode, GenerateSamplesWhatMicrogptLoadSamples) {
  ASSERT_EQ(saved_->exit_code, 0) << saved_->err;
  const std::string m = file("m.safetensors");
  for (const int seed : {1, 7, 42}) {
    const test::CommandResult g =
        run_cli("generate --model " + m + " --seed " + std::to_string(seed));
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(g.out, first_name(m, seed) + "\n") << "seed " << seed;
  }
  // Another temperature, given to both.
  const test::CommandResult hot = run_cli("generate --model " + m + " --seed 5 --temperature 1.5");
  ASSERT_EQ(hot.exit_code, 0) << hot.err;
  EXPECT_EQ(hot.out, first_name(m, 5, " --temperature 1.5") + "\n");
  // --samples N: seeds 7, 8, ..., each the first name of microgpt --load with that seed.
  const test::CommandResult two = run_cli("generate --model " + m + " --seed 7 --samples 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, first_name(m, 7) + "\n---------------\n" + first_name(m, 8) + "\n");
  // A prompt continues a name that starts with it.
  const test::CommandResult prompted =
      run_cli("generate --model " + m + " --seed 7 --prompt ma --max-tokens 3");
  ASSERT_EQ(prompted.exit_code, 0) << prompted.err;
  EXPECT_EQ(prompted.out.rfind("ma", 0), 0u) << prompted.out;
  EXPECT_LE(prompted.out.size(), 2u + 3u + 1u) << prompted.out;
}

TEST_F(CliMicrogptDecode, RunDirectoryLoadsInMicrogptAndGenerate) {
  const std::string run = file("run");
  const test::CommandResult trained = run_cli(
      "train --arch microgpt --n-embd 16 --n-head 4 --n-layer 1 --block-size 16 --steps 4 "
      "--save-every 2 --eval-batches 5 --seed 3 --data " +
      test::source_path("data/names.txt") + " --out " + run);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const std::string name = first_name(run, 11);
  EXPECT_FALSE(name.empty());
  // The run's last checkpoint, named as a file, is the same model.
  EXPECT_EQ(first_name(run + "/step-00000004/model.safetensors", 11), name);
  const test::CommandResult g = run_cli("generate --model " + run + " --seed 11");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out, name + "\n");
}

TEST_F(CliMicrogptDecode, PerplexityScoresNamesAsDocuments) {
  ASSERT_EQ(saved_->exit_code, 0) << saved_->err;
  const test::CommandResult r = perplexity("few.txt", "emma\nolivia\n\nava\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // BOS emma BOS olivia BOS ava BOS: 4 + 4 + 6 + 3 = 17 tokens, all but the first scored.
  EXPECT_EQ(r.out.rfind("tokens 17, scored 16, mean NLL ", 0), 0u) << r.out;
  // A character the model never saw is one line naming the file.
  const test::CommandResult odd = perplexity("odd.txt", "emma\nZoe\n");
  EXPECT_EQ(odd.exit_code, 1);
  EXPECT_NE(odd.err.find("odd.txt"), std::string::npos) << odd.err;
  EXPECT_EQ(std::count(odd.err.begin(), odd.err.end(), '\n'), 1) << odd.err;
}

// One name fits one window: the mean NLL is that of the model's own f64 logits, computed here
// from the checkpoint with a plain loop (the CLI's rows are those logits rounded to f32).
TEST_F(CliMicrogptDecode, PerplexityOfOneNameIsTheMeanOverTheModelsLogits) {
  ASSERT_EQ(saved_->exit_code, 0) << saved_->err;
  const test::CommandResult r = perplexity("one.txt", "emma\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  long long tokens = 0, scored = 0;
  double nll = 0;
  ASSERT_EQ(
      std::sscanf(r.out.c_str(), "tokens %lld, scored %lld, mean NLL %lf", &tokens, &scored, &nll),
      3)
      << r.out;
  EXPECT_EQ(tokens, 6);  // BOS e m m a BOS
  EXPECT_EQ(scored, 5);

  const checkpoints::MicrogptCheckpoint ck = checkpoints::load_microgpt(file("m.safetensors"));
  const CharTokenizer chars = CharTokenizer::from_chars(ck.chars);
  const std::unique_ptr<microgpt::Model> m =
      microgpt::make_model(ck.config, microgpt::Engine::tensor);
  std::copy(ck.params.begin(), ck.params.end(), m->params().begin());
  const std::vector<int> ids = chars.encode_document("emma");
  ASSERT_EQ(ids.size(), 6u);
  m->start_sequence();
  double sum = 0;
  for (size_t j = 0; j + 1 < ids.size(); ++j) {
    const std::span<const double> logits = m->next_logits(ids[j]);
    const double top = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (const double l : logits) z += std::exp(l - top);
    sum += top + std::log(z) - logits[static_cast<size_t>(ids[j + 1])];
  }
  EXPECT_NEAR(nll, sum / 5.0, 2e-6);  // printed with 6 decimals
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
