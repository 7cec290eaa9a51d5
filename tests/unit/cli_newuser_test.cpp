// The CLI as a new user meets it (issue 18), every case run from a directory outside the
// checkout: bundled data found from anywhere, model kinds detected from the file, exit codes,
// "did you mean", help, input from files and stdin, the train-gpt2 grid, interrupted training
// that saves a checkpoint, --init-from's tokenizer, --version and bash completion.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_util.h"
#include "tinylm/kernels/matmul/bf16_dot.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

class CliNewUser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    fs::create_directories(dir_->path() / "work");
    // A small GPT-2 (made by init), a small EvermindLM run (with its tokenizer).
    init_ = new test::CommandResult(in_dir("init --arch gpt2 --preset small-test --out gpt2"));
    test::write_text(
        file("corpus.txt"),
        test::read_text(test::source_path("data/tinyshakespeare.txt")).substr(0, 20000));
    evermind_ = new test::CommandResult(
        in_dir("train --arch evermind --data ../corpus.txt --vocab-size 300 --seq-len 32 "
               "--d-model 16 --steps 20 --seed 5 --threads 1 --out ev"));
  }
  static void TearDownTestSuite() {
    delete init_;
    delete evermind_;
    delete dir_;
  }
  static std::string file(const std::string& name) { return dir_->file(name); }
  static std::string work(const std::string& name) { return dir_->file("work/" + name); }
  // Runs tinylm in DIR/work, a directory outside the checkout, with a shell command line.
  static test::CommandResult in_dir(const std::string& args) {
    return test::run_shell("cd " + dir_->file("work") + " && " + TINYLM_CLI_PATH + " " + args);
  }
  // The same with something on stdin: `{ printf ... | tinylm ARGS; }`.
  static test::CommandResult piped(const std::string& input_cmd, const std::string& args) {
    return test::run_shell("cd " + dir_->file("work") + " && { " + input_cmd + " | " +
                           TINYLM_CLI_PATH + " " + args + "; }");
  }
  void SetUp() override {
    ASSERT_EQ(init_->exit_code, 0) << init_->err;
    ASSERT_EQ(evermind_->exit_code, 0) << evermind_->err;
  }
  static test::TempDir* dir_;
  static test::CommandResult* init_;
  static test::CommandResult* evermind_;
};
test::TempDir* CliNewUser::dir_ = nullptr;
test::CommandResult* CliNewUser::init_ = nullptr;
test::CommandResult* CliNewUser::evermind_ = nullptr;

void expect_error(const test::CommandResult& r, int code, const std::string& phrase) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err << "\n  lacks: " << phrase;
}

TEST_F(CliNewUser, BundledDataIsFoundFromAnyDirectory) {
  const test::CommandResult r = in_dir("microgpt --steps 2 --samples 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("num docs: 32033\n", 0), 0u) << r.out;
  // The README's data/... paths too.
  const test::CommandResult t = in_dir("tokenize --file data/names.txt --grid 2x3");
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("\"ids\""), std::string::npos) << t.out;
  // perplexity too; piped, its stderr has the summary and no progress line.
  const test::CommandResult p =
      in_dir("perplexity --model gpt2 --file data/names.txt --limit 100 --context 32");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out.rfind("tokens 100, scored 99, mean NLL ", 0), 0u) << p.out;
  EXPECT_NE(p.err.find("tok/s"), std::string::npos) << p.err;
  EXPECT_EQ(p.err.find('\r'), std::string::npos) << p.err;
}

// On a terminal (script(1) gives the command one), a progress line: done/total, rate, ETA.
TEST_F(CliNewUser, ProgressLineOnATerminalOnly) {
  if (test::run_shell("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  const std::string cmd = std::string(TINYLM_CLI_PATH) +
                          " perplexity --model gpt2 --file data/names.txt --limit 100 "
                          "--context 16 >/dev/null";
  const test::CommandResult tty =
      test::run_shell("cd " + work("") + " && script -qec '" + cmd + "' /dev/null");
  ASSERT_EQ(tty.exit_code, 0) << tty.out;
  EXPECT_NE(tty.out.find("\r\033[Kperplexity "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("/99 tokens, "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("ETA"), std::string::npos) << tty.out;
}

// init, tokenize (and its --grid) and generate writing to a file keep a progress line on a
// terminal too; piped, nothing. generate's text on a terminal is its own progress: no line.
TEST_F(CliNewUser, InitTokenizeAndGenerateProgressOnATerminalOnly) {
  if (test::run_shell("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  const auto on_tty = [](const std::string& args) {
    return test::run_shell("cd " + work("") + " && script -qec '" + TINYLM_CLI_PATH + " " + args +
                           "' /dev/null");
  };
  const auto expect_line = [](const test::CommandResult& r, const std::string& head,
                              const std::string& counts) {
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("\r\033[K" + head + " "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(counts), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ETA"), std::string::npos) << r.out;
  };
  expect_line(on_tty("init --preset small-test --out gpt2-tty"), "init", " M parameters/s, ");
  expect_line(on_tty("tokenize --file ../corpus.txt >/dev/null"), "tokenize", "/0.0 MB, ");
  expect_line(on_tty("tokenize --file ../corpus.txt --grid 2x3 >/dev/null"), "tokenize", " MB/s");
  expect_line(on_tty("generate --model gpt2 --prompt Hello --max-tokens 6 > gen.txt"), "generate",
              "/6 tokens, ");
  const test::CommandResult live = on_tty("generate --model gpt2 --prompt Hello --max-tokens 6");
  EXPECT_EQ(live.exit_code, 0) << live.out;
  EXPECT_EQ(live.out.find("\033[K"), std::string::npos) << live.out;
  // Piped: nothing extra.
  EXPECT_EQ(init_->err.find('\r'), std::string::npos) << init_->err;
  const test::CommandResult t = in_dir("tokenize --file ../corpus.txt");
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.err, "");
  const test::CommandResult g =
      in_dir("generate --model gpt2 --prompt Hello --max-tokens 6 > gen.txt");
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.err.find('\r'), std::string::npos) << g.err;
}

TEST_F(CliNewUser, ExitCodesAndSuggestions) {
  expect_error(in_dir("train-gpt2 --model gpt2 --tokens x.json --step 10"), 2, "--steps");
  expect_error(in_dir("generate --model gpt2 --promt hi"), 2, "did you mean --prompt");
  expect_error(in_dir("--bogus"), 2, "unknown flag --bogus");
  expect_error(in_dir("genrate --model gpt2"), 2, "did you mean 'generate'");
  expect_error(in_dir("perplexity --model gpt2"), 2, "--file");                   // missing flag
  expect_error(in_dir("generate --model gpt2 --max-tokens x"), 2, "max-tokens");  // bad value
  expect_error(in_dir("generate --model gpt2 --prompt hi --max-tokens -1"), 2, "--max-tokens");
  expect_error(in_dir("generate --model missing --prompt hi"), 1, "missing");  // runtime
  expect_error(in_dir("help nosuch"), 2, "nosuch");
  // A usage error prints nothing on stdout, not even the prompt.
  EXPECT_EQ(in_dir("generate --model gpt2 --prompt hi --max-tokens -1").out, "");
  const test::CommandResult top = in_dir("help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("perplexity"), std::string::npos);
  EXPECT_NE(top.out.find("Exit codes"), std::string::npos);
  const test::CommandResult sub = in_dir("help generate");
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.out.find("--prompt-file"), std::string::npos);
  EXPECT_EQ(sub.out, in_dir("generate --help").out);
}

TEST_F(CliNewUser, ModelKindIsReadFromTheFile) {
  const std::string evl = test::source_path("tests/fixtures/evl/tiny_f32.evl");
  expect_error(in_dir("convert " + evl + " out.gguf"), 1,
               "this is an EvermindLM checkpoint (EVL0); convert expects GPT-2");
  expect_error(in_dir("generate --arch gpt2 --model " + evl + " --prompt hi"), 1,
               "this is an EvermindLM checkpoint (EVL0), but --arch gpt2 expects GPT-2");
  expect_error(in_dir("generate --model " + evl + " --prompt hi --activations q8_0"), 2,
               "--activations q8_0: EvermindLM generates in f32");
  expect_error(in_dir("generate --arch evermind --model gpt2 --prompt hi"), 1,
               "this is a GPT-2 model directory, but --arch evermind expects EvermindLM");
  ASSERT_EQ(in_dir("microgpt --steps 1 --samples 0 --save micro.safetensors").exit_code, 0);
  // Every family decodes: a microgpt name that starts with the prompt.
  const test::CommandResult micro = in_dir("generate --model micro.safetensors --prompt hi");
  EXPECT_EQ(micro.exit_code, 0) << micro.err;
  EXPECT_EQ(micro.out.rfind("hi", 0), 0u) << micro.out;
  expect_error(in_dir("convert micro.safetensors out.gguf"), 1, "this is a microgpt checkpoint");
  test::write_text(work("junk.bin"), "not a model at all, not at all");
  expect_error(in_dir("generate --model junk.bin --prompt hi"), 1, "not a model file");
  // config.json means its directory; a weights file and a run directory work too.
  for (const char* model : {"gpt2/config.json", "gpt2/model.safetensors", "gpt2"}) {
    const test::CommandResult r =
        in_dir(std::string("generate --model ") + model + " --prompt Hi --max-tokens 2");
    EXPECT_EQ(r.exit_code, 0) << model << ": " << r.err;
    EXPECT_EQ(r.out.rfind("Hi", 0), 0u) << r.out;
  }
  // EvermindLM without --arch, from the run directory: samples by default, reports tokens/s.
  const test::CommandResult ev = in_dir("generate --model ev --prompt First --max-tokens 12");
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_NE(ev.err.find("tok/s"), std::string::npos) << ev.err;
  EXPECT_EQ(ev.err.find("bytes"), std::string::npos) << ev.err;
  const test::CommandResult seed2 =
      in_dir("generate --model ev --prompt First --max-tokens 12 --seed 2");
  const test::CommandResult greedy =
      in_dir("generate --model ev --prompt First --max-tokens 12 --temperature 0");
  ASSERT_EQ(seed2.exit_code, 0) << seed2.err;
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  EXPECT_EQ(ev.out, in_dir("generate --model ev --prompt First --max-tokens 12").out);
  EXPECT_TRUE(ev.out != seed2.out || ev.out != greedy.out) << "not sampling by default";
}

TEST_F(CliNewUser, TextFromFilesAndStdin) {
  EXPECT_EQ(piped("printf 'Hello world'", "tokenize").out, "15496 995\n");
  test::write_text(work("hello.txt"), "Hello world");
  EXPECT_EQ(in_dir("tokenize --file hello.txt").out, "15496 995\n");
  EXPECT_EQ(piped("printf '15496 995'", "tokenize --decode").out, "Hello world\n");
  expect_error(in_dir("tokenize"), 2, "no text");  // stdin is /dev/null here: nothing piped?
}

TEST_F(CliNewUser, GeneratePromptsFromFilesAndStdin) {
  test::write_text(work("prompt.txt"), "Once upon");
  const test::CommandResult file_r =
      in_dir("generate --model gpt2 --prompt-file prompt.txt --max-tokens 3");
  ASSERT_EQ(file_r.exit_code, 0) << file_r.err;
  EXPECT_EQ(file_r.out, in_dir("generate --model gpt2 --prompt 'Once upon' --max-tokens 3").out);
  EXPECT_EQ(piped("printf 'Once upon'", "generate --model gpt2 --max-tokens 3").out, file_r.out);
  test::write_text(work("prompts.txt"), "Once upon\nThe cat \"sat\"\n");
  const test::CommandResult many = in_dir(
      "generate --model gpt2 --prompts prompts.txt --samples 2 --max-tokens 3 --temperature 1");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  std::istringstream lines(many.out);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 4u) << many.out;
  EXPECT_EQ(rows[0]["prompt"], "Once upon");
  EXPECT_EQ(rows[2]["prompt"], "The cat \"sat\"");
  EXPECT_EQ(rows[1]["sample"], 1);
  EXPECT_EQ(rows[0]["tokens"], 3);
  EXPECT_TRUE(rows[0]["text"].is_string());
  expect_error(in_dir("generate --model gpt2 --prompt a --prompts prompts.txt"), 2, "one of");
}

TEST_F(CliNewUser, TokenizeMakesTheTrainGpt2Grid) {
  const test::CommandResult grid = in_dir("tokenize --file ../corpus.txt --grid 4x65");
  ASSERT_EQ(grid.exit_code, 0) << grid.err;
  const nlohmann::json j = nlohmann::json::parse(grid.out);
  ASSERT_EQ(j["ids"].size(), 4u);
  for (const auto& row : j["ids"]) EXPECT_EQ(row.size(), 65u);
  test::write_text(work("grid.json"), grid.out);
  expect_error(in_dir("tokenize --grid 4x65 tiny"), 1, "the grid needs 260");
  expect_error(in_dir("tokenize --grid 4by65 tiny"), 2, "--grid");
  const test::CommandResult r =
      in_dir("train-gpt2 --model gpt2 --tokens grid.json --steps 2 --metrics-out m.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step   2  loss "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" ms"), std::string::npos) << "timings belong on stderr: " << r.out;
  EXPECT_NE(r.err.find("ms/step"), std::string::npos) << r.err;
}

TEST_F(CliNewUser, InterruptedTrainingSavesACheckpointAndSaysWhere) {
  // A long microgpt run into `out`, stopped by `signal` once its first steps are logged.
  const auto interrupted = [&](const std::string& out, const std::string& signal) {
    const std::string script =
        std::string(TINYLM_CLI_PATH) +
        " train --arch microgpt --data data/names.txt --steps 1000000 --out " + out +
        " & pid=$!; for i in $(seq 600); do [ -s " + out +
        "/metrics.jsonl ] && break; sleep 0.1; done; kill -" + signal + " $pid; wait $pid";
    return test::run_shell("cd " + work("") + " && { " + script + "; }");
  };
  const test::CommandResult r = interrupted("run", "INT");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted at step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tinylm train --resume run"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(work("run/latest/train_state.bin")));
  // SIGTERM the same way, 143.
  const test::CommandResult t = interrupted("run2", "TERM");
  EXPECT_EQ(t.exit_code, 143) << t.err;
  EXPECT_TRUE(fs::exists(work("run2/latest/train_state.bin")));
}

TEST_F(CliNewUser, InitFromUsesTheModelsTokenizerAndRefusesWithoutOne) {
  const test::CommandResult ok = in_dir(
      "train --init-from ev --data ../corpus.txt --seq-len 32 --steps 2 --threads 1 --out ev2");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("saved with the model"), std::string::npos) << ok.err;
  EXPECT_EQ(test::read_text(work("ev2/tokenizer.json")),
            test::read_text(work("ev/latest/model.tokenizer.json")));
  fs::copy_file(work("ev/latest/model.evl"), work("lonely.evl"));
  expect_error(in_dir("train --init-from lonely.evl --data ../corpus.txt --out ev3"), 1,
               "no tokenizer saved with the model");
  EXPECT_FALSE(fs::exists(work("ev3/run.json")));
  // delta export of the whole retrained model: says so.
  const test::CommandResult d = in_dir(
      "delta export --base ev/latest/model.evl --model ev2/latest/model.evl --eps 0 --out u.evd");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find(" rows"), std::string::npos) << d.out;
  if (fs::file_size(work("u.evd")) >= fs::file_size(work("ev2/latest/model.evl"))) {
    EXPECT_NE(d.err.find("not smaller than the model"), std::string::npos) << d.err;
  }
  // An f16 copy of an f32 model changes nearly every row: a delta twice the f16 file's size.
  const std::string evl = test::source_path("tests/fixtures/evl/");
  const test::CommandResult big = in_dir("delta export --base " + evl + "tiny_f32.evl --model " +
                                         evl + "tiny_f16.evl --eps 0 --out big.evd");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const auto delta_bytes = fs::file_size(work("big.evd"));
  const auto model_bytes = fs::file_size(evl + "tiny_f16.evl");
  ASSERT_GE(delta_bytes, model_bytes);
  EXPECT_NE(big.out.find(" rows"), std::string::npos) << big.out;
  EXPECT_NE(big.err.find("warning: the delta (" + std::to_string(delta_bytes) + " bytes"),
            std::string::npos)
      << big.err;
  EXPECT_NE(big.err.find("is not smaller than the model (" + std::to_string(model_bytes)),
            std::string::npos)
      << big.err;
}

TEST_F(CliNewUser, VersionAndCompletion) {
  const test::CommandResult v = in_dir("--version");
  ASSERT_EQ(v.exit_code, 0);
  std::istringstream lines(v.out);
  std::vector<std::string> l;
  for (std::string s; std::getline(lines, s);) l.push_back(s);
  ASSERT_GE(l.size(), 8u) << v.out;
  EXPECT_EQ(l[0].rfind("tinylm ", 0), 0u);
  EXPECT_EQ(l[1].rfind("kernels: ", 0), 0u);  // scripts read lines 2 and 3
  EXPECT_EQ(l[2].rfind("mpi: ", 0), 0u);
  EXPECT_EQ(l[3].rfind("commit: ", 0), 0u);
  EXPECT_EQ(l[4].rfind("compiler: ", 0), 0u);
  if (kernels::bf16_dot_available())
    EXPECT_TRUE(l[5] == "bf16 products: vdpbf16ps" || l[5] == "bf16 products: amx") << l[5];
  else
    EXPECT_EQ(l[5], "bf16 products: none (they need AVX512_BF16 at the avx512 level)");
  EXPECT_TRUE(l[6] == "int8 products: amx (AMX-INT8)" ||
              l[6] == "int8 products: vpdpbusd (AVX512-VNNI)" ||
              l[6] == "int8 products: vpdpbusd (AVX-VNNI)" || l[6] == "int8 products: vpmaddubsw" ||
              l[6] == "int8 products: scalar")
      << l[6];
  EXPECT_EQ(l[7].rfind("gpu: ", 0), 0u) << l[7];  // cli_devices_test.cpp checks the rest
  const test::CommandResult c = in_dir("completion bash");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("complete -o filenames -F _tinylm tinylm"), std::string::npos);
  EXPECT_NE(c.out.find("--prompt-file"), std::string::npos);
  test::write_text(work("completion.bash"), c.out);
  EXPECT_EQ(test::run_shell("bash -n " + work("completion.bash")).exit_code, 0);
  // The completion offers the commands after "tinylm".
  const test::CommandResult words =
      test::run_shell("bash -c 'source " + work("completion.bash") +
                      "; COMP_WORDS=(tinylm gen); COMP_CWORD=1; _tinylm; echo ${COMPREPLY[@]}'");
  EXPECT_EQ(words.out, "generate\n");
  // And --dtype's values, the quantized ones included.
  const test::CommandResult dtypes = test::run_shell(
      "bash -c 'source " + work("completion.bash") +
      "; COMP_WORDS=(tinylm generate --dtype q); COMP_CWORD=3; _tinylm; echo ${COMPREPLY[@]}'");
  EXPECT_EQ(dtypes.out, "q8_0 q4_0\n");
  // Each command's own values: convert writes no bf16.
  const auto complete = [&](const std::string& line, int word) {
    return test::run_shell("bash -c 'source " + work("completion.bash") + "; COMP_WORDS=(" + line +
                           "); COMP_CWORD=" + std::to_string(word) +
                           "; _tinylm; echo ${COMPREPLY[@]}'")
        .out;
  };
  EXPECT_EQ(complete("tinylm generate --dtype b", 3), "bf16\n");
  EXPECT_EQ(complete("tinylm convert --dtype b", 3), "\n");
  EXPECT_EQ(complete("tinylm convert --dtype f", 3), "f32 f16\n");
  EXPECT_EQ(complete("tinylm train-gpt2 --overlap o", 3), "on off\n");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
