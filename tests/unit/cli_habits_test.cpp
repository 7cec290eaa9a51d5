// The CLI as llama.cpp users type it (issue 39): short flags and aliases that mean what
// llama.cpp's mean, commands by a unique prefix, mistyped flags and stray arguments named, and
// no command writing to stdout before a usage or runtime error.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/families/family.h"
#include "tinylm/generate/generate.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::count_lines;
using test::run_cli;

class CliHabits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    init_ = new test::CommandResult(
        run_cli("init --arch gpt2 --preset small-test --seed 4 --out " + model()));
    test::write_text(dir_->file("prompt.txt"), "The quick brown fox");
    test::write_text(dir_->file("text.txt"),
                     test::read_text(test::source_path("data/tinyshakespeare.txt")).substr(0, 600));
  }
  static void TearDownTestSuite() {
    delete init_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(init_->exit_code, 0) << init_->err; }
  static std::string model() { return dir_->file("m"); }
  static std::string file(const std::string& name) { return dir_->file(name); }
  static test::TempDir* dir_;
  static test::CommandResult* init_;
};
test::TempDir* CliHabits::dir_ = nullptr;
test::CommandResult* CliHabits::init_ = nullptr;

void expect_usage_error(const test::CommandResult& r, const std::string& phrase) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err << "\n  lacks: " << phrase;
}

// Each short flag or alias gives the output of the long flag it stands for.
// --cache-type (llama.cpp's --cache-type-k/v): the KV cache's type, named on the load line, for
// generate and perplexity alike; refused where it cannot apply.
TEST_F(CliHabits, CacheTypeChoosesTheKvCachesType) {
  const test::CommandResult gen =
      run_cli("generate -m " + model() + " -p 'The quick brown fox' -n 8 --cache-type f16");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_FALSE(gen.out.empty());
  EXPECT_NE(gen.err.find("f16 KV cache"), std::string::npos) << gen.err;
  const test::CommandResult ppl = run_cli("perplexity -m " + model() + " -f " + file("text.txt") +
                                          " --limit 100 --context 32 --cache-type bf16");
  EXPECT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_NE(ppl.err.find("bf16 KV cache"), std::string::npos) << ppl.err;
  expect_usage_error(run_cli("generate -m " + model() + " -p hi --cache-type q8_0"),
                     "--cache-type");
  const std::string evl = test::source_path("tests/fixtures/evl/tiny_f32.evl");
  expect_usage_error(run_cli("generate -m " + evl + " -p hi --cache-type f16"),
                     "--cache-type f16: EvermindLM generates in f32");
  expect_usage_error(run_cli("generate -m " + model() + " -p hi --device gpu --cache-type f16"),
                     "a GPU keeps its KV cache in the weights' type");
}

TEST_F(CliHabits, ShortFlagsAndAliasesMeanTheLongOnes) {
  const test::CommandResult longs =
      run_cli("generate --model " + model() +
              " --prompt 'The quick brown fox' --max-tokens 6 --seed 3 --temperature 0.9 "
              "--threads 1");
  ASSERT_EQ(longs.exit_code, 0) << longs.err;
  const std::vector<std::string> spellings = {
      "-m " + model() + " -p 'The quick brown fox' -n 6 -s 3 --temp 0.9 -t 1",
      "-m " + model() + " -f " + file("prompt.txt") + " --n-predict 6 -s 3 --temp 0.9 -t 1",
      "--model=" + model() + " --prompt-file " + file("prompt.txt") + " -n6 -s3 --temp=0.9 -t1",
  };
  for (const std::string& s : spellings) {
    const test::CommandResult r = run_cli("generate " + s);
    EXPECT_EQ(r.exit_code, 0) << s << ": " << r.err;
    EXPECT_EQ(r.out, longs.out) << s;
  }
  // Sampling at that temperature draws something else with another seed: the seed took.
  EXPECT_NE(
      run_cli("generate -m " + model() + " -p 'The quick brown fox' -n 6 -s 4 --temp 0.9").out,
      longs.out);

  // perplexity's -f and -c (llama-perplexity's), and --ctx-size: 64 tokens, a few windows.
  const std::string limit = " --limit 64 ";
  const test::CommandResult ppl = run_cli("perplexity --model " + model() + " --file " +
                                          file("text.txt") + limit + "--context 32");
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_NE(ppl.err.find("context 32"), std::string::npos) << ppl.err;
  EXPECT_EQ(run_cli("perplexity -m " + model() + " -f " + file("text.txt") + limit + "-c 32").out,
            ppl.out);
  EXPECT_EQ(
      run_cli("perplexity -m " + model() + " -f " + file("text.txt") + limit + "--ctx-size 32").out,
      ppl.out);

  // tokenize -m: the model's own tokenizer (init wrote GPT-2's beside the weights).
  const test::CommandResult ids = run_cli("tokenize -m " + model() + " 'Hello world'");
  EXPECT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out, "15496 995\n");
  EXPECT_EQ(run_cli("tokenize --model " + model() + " 'Hello world'").out, ids.out);

  // serve's -c is its --ctx (started servers are the serve tests' business).
  const std::string serve_help = run_cli("serve --help").out;
  EXPECT_NE(serve_help.find("-c,--ctx,--ctx-size"), std::string::npos) << serve_help;
  EXPECT_NE(serve_help.find("-m,--model"), std::string::npos);
}

// llama.cpp's and OpenAI's penalties on generate: the CLI's text is the library's generate loop
// given the same options (generate/logit_processors.h's own tests hold the definitions), and
// --stop ends the text before the stop string.
TEST_F(CliHabits, PenaltiesAndStopStrings) {
  const std::string prompt = "The quick brown fox";
  const families::Detected d = families::detect(model());
  ASSERT_NE(d.family, nullptr);
  const BpeTokenizer tok = d.family->load_tokenizer("", d);
  families::DecodeModel m = d.family->load_decoder(d, {});
  const auto library = [&](double frequency, double presence, double repetition) {
    generate::GenerateOptions o;
    o.max_tokens = 12;
    o.eos_id = tok.eot_id().value_or(-1);
    o.penalties.frequency = frequency;
    o.penalties.presence = presence;
    o.penalties.repetition = repetition;
    return prompt + generate::generate_text(*m.backend, tok, tok.encode(prompt), o).text + "\n";
  };
  const std::string plain = library(0, 0, 1);
  ASSERT_EQ(run_cli("generate -m " + model() + " -p '" + prompt + "' -n 12").out, plain);
  const struct {
    std::string flags;
    double frequency, presence, repetition;
  } cases[] = {
      {"--frequency-penalty 1.5", 1.5, 0, 1},
      {"--presence-penalty 2", 0, 2, 1},
      {"--repeat-penalty 2 --frequency-penalty 0.5 --presence-penalty -0.5", 0.5, -0.5, 2}};
  for (const auto& c : cases) {
    const std::string want = library(c.frequency, c.presence, c.repetition);
    EXPECT_NE(want, plain) << c.flags << ": the penalty should change this greedy text";
    const test::CommandResult r =
        run_cli("generate -m " + model() + " -p '" + prompt + "' -n 12 " + c.flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want) << c.flags;
  }
  expect_usage_error(run_cli("generate -m " + model() + " -p hi --frequency-penalty 3"),
                     "frequency penalty must be in [-2, 2]");

  // --stop: the text up to the first stop string of those given, which is not printed.
  const std::string generated = plain.substr(prompt.size(), plain.size() - prompt.size() - 1);
  ASSERT_GE(generated.size(), 8u);
  const std::string stop = generated.substr(generated.size() / 2, 3);
  const std::string before = generated.substr(0, generated.find(stop));
  const test::CommandResult stopped =
      run_cli("generate -m " + model() + " -p '" + prompt +
              "' -n 12 --stop 'no such text' --stop '" + stop + "'");
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_EQ(stopped.out, prompt + before + "\n");
  // And in --prompts' JSON lines.
  test::write_text(file("prompts.txt"), prompt + "\n");
  const test::CommandResult json = run_cli("generate -m " + model() + " --prompts " +
                                           file("prompts.txt") + " -n 12 --stop '" + stop + "'");
  EXPECT_NE(json.out.find("\"text\":" + nlohmann::json(before).dump()), std::string::npos)
      << json.out;
  expect_usage_error(run_cli("generate -m " + model() + " -p hi --stop ''"), "--stop");
}

// -c caps the positions a generation fills; more than the model's is refused.
TEST_F(CliHabits, ContextSizeCapsTheGeneration) {
  const test::CommandResult capped =
      run_cli("generate -m " + model() + " -p 'The quick brown fox' -n 20 -c 8");
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_NE(capped.err.find("context of 8 positions"), std::string::npos) << capped.err;
  // The prompt is 4 tokens, so 5 new ones fill 8 positions (the last is drawn, not fed).
  EXPECT_NE(capped.err.find("; 5 tokens:"), std::string::npos) << capped.err;
  const test::CommandResult more = run_cli("generate -m " + model() + " -p hi -c 4096");
  EXPECT_EQ(more.exit_code, 2);
  EXPECT_EQ(more.out, "");
  EXPECT_NE(more.err.find("--ctx-size 4096 is more than the model's context of 128"),
            std::string::npos)
      << more.err;
  const test::CommandResult prompt_too_long =
      run_cli("generate -m " + model() + " -p 'The quick brown fox' -c 3");
  EXPECT_EQ(prompt_too_long.exit_code, 1);
  EXPECT_EQ(prompt_too_long.out, "");
  EXPECT_NE(prompt_too_long.err.find("more than the model's context of 3"), std::string::npos)
      << prompt_too_long.err;
}

TEST_F(CliHabits, CommandsByAUniquePrefix) {
  const std::string args = " -m " + model() + " -p Hi -n 3";
  const test::CommandResult full = run_cli("generate" + args);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(run_cli("gen" + args).out, full.out);
  EXPECT_EQ(run_cli("g" + args).out, full.out);
  EXPECT_EQ(run_cli("help gen").out, run_cli("help generate").out);
  EXPECT_EQ(run_cli("tok -m " + model() + " 'Hello world'").out, "15496 995\n");
  // Ambiguous: the candidates, in one line.
  expect_usage_error(run_cli("tr --help"), "'tr' could be train-gpt2, train;");
  expect_usage_error(run_cli("d --help"), "could be");  // delta, devices
}

TEST_F(CliHabits, MistakesAreNamed) {
  const std::string m = " -m " + model();
  // A typo in a required flag names the typo, not the missing flag.
  expect_usage_error(run_cli("generate --modle " + model() + " -p hi"),
                     "unknown flag --modle (did you mean --model?)");
  // Prefixes and edit distance.
  expect_usage_error(run_cli("generate" + m + " -p hi --max 5"),
                     "unknown flag --max (did you mean --max-tokens?)");
  expect_usage_error(run_cli("generate" + m + " -p hi --temperatur 0.5"),
                     "did you mean --temperature?");
  expect_usage_error(run_cli("perplexity" + m + " -f x --strid 4"), "did you mean --stride?");
  // A short flag a command does not take: named, with no far-fetched guess.
  const test::CommandResult short_flag = run_cli("perplexity" + m + " -f x -n 5");
  expect_usage_error(short_flag, "perplexity: unknown flag -n;");
  EXPECT_EQ(short_flag.err.find("did you mean"), std::string::npos) << short_flag.err;
  // Arguments a command does not take: which one, and what the command takes.
  expect_usage_error(run_cli("generate " + model() + " -p hi"),
                     "unexpected argument '" + model() + "': generate takes flags only");
  expect_usage_error(run_cli("generate" + m + " -p hi extra"), "unexpected argument 'extra'");
  expect_usage_error(run_cli("tokenize one two"),
                     "unexpected argument 'two': tokenize takes TEXT and flags");
  // Nested commands: the right level is named.
  expect_usage_error(run_cli("delta export --bse x"),
                     "delta export: unknown flag --bse (did you mean --base?)");
  expect_usage_error(run_cli("delta extract --base x"), "delta: unknown command 'extract'");
  // A flag value out of range is a usage error (2), as the other flags' are.
  expect_usage_error(run_cli("generate" + m + " -p hi --temp -1"), "temperature must be >= 0");
}

// The progress line of generate, perplexity, tokenize and init is cut to a narrow terminal's
// width, so it is rewritten in place instead of wrapping.
TEST_F(CliHabits, ProgressLineFitsANarrowTerminal) {
  if (test::run_shell("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  const std::string cmd = std::string(TINYLM_CLI_PATH) + " perplexity -m " + model() + " -f " +
                          file("text.txt") + " -c 16 >/dev/null";
  const test::CommandResult tty =
      test::run_shell("script -qec 'stty cols 24; " + cmd + "' /dev/null");
  ASSERT_EQ(tty.exit_code, 0) << tty.out;
  const std::string mark = "\r\033[K";
  size_t lines = 0;
  for (size_t at = tty.out.find(mark); at != std::string::npos; at = tty.out.find(mark, at + 1)) {
    const size_t start = at + mark.size();
    const size_t end = tty.out.find_first_of("\r\n", start);
    const std::string line = tty.out.substr(start, end - start);
    if (line.rfind("perplexity", 0) != 0) continue;  // (a result line, after the progress)
    ++lines;
    EXPECT_LE(line.size(), 23u) << line;
  }
  EXPECT_GT(lines, 0u) << tty.out;
}

// The README's training recipe as printed, from a directory outside the checkout: configs/ and
// data/ are found as bundled files.
TEST_F(CliHabits, ReadmeRecipeRunsFromAnyDirectory) {
  const test::CommandResult r = test::run_shell(
      "cd " + dir_->path().string() + " && " + TINYLM_CLI_PATH +
      " train --config configs/shakespeare_char.toml --data data/tinyshakespeare.txt --out "
      "runs/char --steps 2 --eval-every 2 --eval-batches 1 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("65 tokens"), std::string::npos) << r.err;  // char vocabulary
  const test::CommandResult gen =
      test::run_shell("cd " + dir_->path().string() + " && " + TINYLM_CLI_PATH +
                      " generate -m runs/char/latest -p ROMEO: --sample -n 5 -s 1");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(gen.out.rfind("ROMEO:", 0), 0u) << gen.out;
}

// Every command, given a bad argument or bad input, writes nothing to stdout and one line to
// stderr, and exits 2 for a usage error, 1 for a runtime one. The list is checked against
// `tinylm help`, so a new command cannot miss the sweep.
TEST_F(CliHabits, NoCommandWritesStdoutBeforeAnError) {
  std::vector<std::string> commands;
  {
    std::istringstream help(run_cli("help").out);
    bool in_list = false;
    for (std::string line; std::getline(help, line);) {
      if (line == "Subcommands:") in_list = true;
      if (in_list && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ')
        commands.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  std::vector<std::string> swept;
  const std::string m = model(), missing = file("missing");
  struct Case {
    std::string args;
    int code;
  };
  const std::vector<Case> cases = {
      {"microgpt --no-such-flag", 2},
      {"microgpt --n-head 3", 2},
      {"microgpt --samples -1", 2},
      {"microgpt --temperature 0", 2},
      {"microgpt --data " + missing, 1},
      {"generate --no-such-flag", 2},
      {"generate -m " + m + " -p hi -n -1", 2},
      {"generate -m " + missing + " -p hi", 1},
      {"perplexity --no-such-flag", 2},
      {"perplexity -m " + m + " -f " + missing, 1},
      {"tokenize --no-such-flag", 2},
      {"tokenize --grid 0x0 hi", 2},
      {"tokenize -m " + missing + " hi", 1},
      {"init --no-such-flag", 2},
      {"init --arch gpt2 --preset nosuch --out " + file("x1"), 1},
      {"train-gpt2 --no-such-flag", 2},
      {"train-gpt2 --model " + m + " --tokens " + missing, 1},
      {"train --no-such-flag", 2},
      {"train --arch gpt2 --data " + missing + " --out " + file("r1"), 1},
      {"plot --no-such-flag", 2},
      {"plot " + missing + " --out " + file("p.svg"), 1},
      {"delta --no-such-flag", 2},
      {"delta apply --base " + missing + " --delta " + missing + " --out " + file("x3"), 1},
      {"serve --no-such-flag", 2},
      {"serve -m " + m + " --port 70000", 2},
      {"convert --no-such-flag", 2},
      {"convert " + missing + " " + file("x4"), 1},
      {"devices --no-such-flag", 2},
      {"download --no-such-flag", 2},
      {"download a/b/c", 2},  // its runtime errors need a Hub: hub_cli_test.cpp
      {"completion fish", 2},
  };
  for (const Case& c : cases) {
    const test::CommandResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_EQ(count_lines(r.err), 1) << c.args << ": " << r.err;
    swept.push_back(c.args.substr(0, c.args.find(' ')));
  }
  for (const std::string& command : commands)
    EXPECT_NE(std::find(swept.begin(), swept.end(), command), swept.end())
        << command << " is not in the sweep";
  EXPECT_GE(commands.size(), 13u);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
