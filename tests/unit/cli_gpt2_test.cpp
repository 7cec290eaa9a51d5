// The GPT-2 subcommands end to end: init -> generate / perplexity / tokenize, and their errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/kernels/matmul/bf16_dot.h"

namespace tinylm {
namespace {

using test::run_cli;

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(CliGpt2, TokenizeKnownGpt2Ids) {
  const std::string vocab = " --tokenizer " + test::source_path("data/gpt2");
  const test::CommandResult r = run_cli("tokenize" + vocab + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "15496 995\n");
  const test::CommandResult d = run_cli("tokenize" + vocab + " --decode '15496, 995'");
  EXPECT_EQ(d.out, "Hello world\n");
  EXPECT_EQ(run_cli("tokenize" + vocab + " --allow-special '<|endoftext|>'").out, "50256\n");
  EXPECT_EQ(run_cli("tokenize" + vocab + " '<|endoftext|>'").out, "27 91 437 1659 5239 91 29\n");
  const test::CommandResult bad = run_cli("tokenize" + vocab + " --decode '12 nope'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(lines(bad.err), 1);
}

TEST(CliGpt2, InitThenGenerateAndPerplexity) {
  test::TempDir dir;
  const std::string model = dir.file("m");
  const test::CommandResult init =
      run_cli("init --arch gpt2 --preset small-test --seed 3 --out " + model + " --tokenizer " +
              test::source_path("data/gpt2"));
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const auto weights = io::SafetensorsFile::open(model + "/model.safetensors");
  EXPECT_NE(weights.find("h.0.attn.bias"), nullptr);
  EXPECT_NE(weights.find("wte.weight"), nullptr);

  const test::CommandResult gen =
      run_cli("generate --model " + model + " --prompt 'The quick brown fox' --max-tokens 8");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(gen.out.rfind("The quick brown fox", 0), 0u);
  EXPECT_NE(gen.err.find("decode"), std::string::npos);
  // Greedy is deterministic, and every dtype runs.
  EXPECT_EQ(
      run_cli("generate --model " + model + " --prompt 'The quick brown fox' --max-tokens 8").out,
      gen.out);
  for (const char* dtype : {"bf16", "f16", "q8_0", "q4_0"}) {
    const test::CommandResult r =
        run_cli("generate --model " + model + " --prompt 'Hi' --max-tokens 4 --dtype " + dtype);
    EXPECT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("of ") + dtype + " weights"), std::string::npos) << r.err;
  }
  const test::CommandResult q8x = run_cli("generate --model " + model +
                                          " --prompt 'Hi' --max-tokens 4 --dtype q4_0 "
                                          "--activations q8_0");
  EXPECT_EQ(q8x.exit_code, 0) << q8x.err;
  EXPECT_NE(q8x.err.find("of q4_0 weights (q8_0 activations)"), std::string::npos) << q8x.err;
  // bf16 activations run where this process's level has AVX512_BF16 (the CLI inherits
  // TINYLM_ISA), and are refused in one line elsewhere.
  const test::CommandResult bfx = run_cli("generate --model " + model +
                                          " --prompt 'Hi' --max-tokens 4 --dtype bf16 "
                                          "--activations bf16");
  if (kernels::bf16_dot_available()) {
    EXPECT_EQ(bfx.exit_code, 0) << bfx.err;
    EXPECT_NE(bfx.err.find("of bf16 weights (bf16 activations)"), std::string::npos) << bfx.err;
  } else {
    EXPECT_NE(bfx.exit_code, 0);
    EXPECT_EQ(lines(bfx.err), 1) << bfx.err;
    EXPECT_NE(bfx.err.find("needs AVX512_BF16"), std::string::npos) << bfx.err;
  }
  test::write_text(dir.file("text.txt"), "It was the best of times, it was the worst of times.");
  const test::CommandResult ppl = run_cli("perplexity --model " + model + " --file " +
                                          dir.file("text.txt") + " --context 8 --stride 4");
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_NE(ppl.out.find("perplexity"), std::string::npos);
  const test::CommandResult ppl_q =
      run_cli("perplexity --model " + model + " --file " + dir.file("text.txt") +
              " --context 8 --stride 4 --dtype q4_0");
  ASSERT_EQ(ppl_q.exit_code, 0) << ppl_q.err;
  EXPECT_NE(ppl_q.out.find("perplexity"), std::string::npos);
}

TEST(CliGpt2, ErrorsAreOneLine) {
  test::TempDir dir;
  for (const std::string& args :
       {std::string("generate --model ") + dir.file("none") + " --prompt hi",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --dtype f8",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --dtype q5_0",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --top-p 0",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --activations q8_0",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --activations bf16",
        std::string("perplexity --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --file " + dir.file("missing.txt"),
        std::string("init --arch gpt2 --preset 7B --out ") + dir.file("x")}) {
    const test::CommandResult r = run_cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace tinylm
