// Hostile input through the CLI: malformed files and flag values. Each case must end in one
// line on stderr and a non-zero exit (not a crash), with no output file created or changed.
// Covers issue 17's list: unbounded --threads, EvermindLM shapes without ceilings, outputs
// found unwritable only after the work, symlinks planted at temporary names, and the
// malformed files the fuzz corpora hold; and issue 35's: outputs that are devices or FIFOs,
// stdout that fails, unbounded reads, out-of-range values taken as defaults.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "special_files.h"
#include "test_util.h"
#include "tinylm/models/evermind/config.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using test::run_cli;

// Every file under root (path relative to root -> size and hash of its contents; symlinks
// as "-> target").
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  if (!fs::exists(fs::symlink_status(root))) return out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::end(it); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    const fs::file_status st = it->symlink_status();
    if (fs::is_symlink(st))
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
    else if (fs::is_regular_file(st)) {
      const std::string bytes = test::read_text(it->path().string());
      out[rel] = std::to_string(bytes.size()) + " bytes, hash " +
                 std::to_string(std::hash<std::string>{}(bytes));
    } else
      out[rel + "/"] = "";
  }
  return out;
}

// Runs args; expects a one-line error containing `phrase`, a non-zero exit that is not a
// signal, and `watched` exactly as before.
void expect_refused(const std::string& args, const std::string& phrase, const fs::path& watched) {
  const auto before = snapshot(watched);
  const test::CommandResult r = run_cli(args);
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_LT(r.exit_code, 128) << "crashed: " << args << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << args << "\nstderr: " << r.err;
  EXPECT_EQ(snapshot(watched), before) << args << ": files changed";
}

class HostileInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const test::CommandResult r =
        run_cli("init --preset small-test --threads 1 --out " + file("model"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    test::write_text(
        file("corpus.txt"),
        test::read_text(test::source_path("data/tinyshakespeare.txt")).substr(0, 4000));
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string file(const std::string& name) { return dir_->file(name); }
  static test::TempDir* dir_;
};
test::TempDir* HostileInput::dir_ = nullptr;

const std::string kTinyModel = "tests/fixtures/gpt2/tiny/model.safetensors";
const std::string kTokens = "tests/fixtures/gpt2/train/tokens.json";

TEST_F(HostileInput, ThreadCountsOutsideTheBoundAreRefusedBeforeAnyWork) {
  test::TempDir out;
  const std::string model = " --model " + file("model");
  const std::string commands[] = {
      "generate" + model + " --prompt hi --max-tokens 2",
      "perplexity" + model + " --file " + file("corpus.txt"),
      "init --preset small-test --out " + out.file("init"),
      "train-gpt2 --model " + test::source_path(kTinyModel) + " --tokens " +
          test::source_path(kTokens) + " --steps 1 --metrics-out " + out.file("m.json"),
      "train --arch gpt2 --preset small-test --data " + file("corpus.txt") +
          " --steps 1 --seq-len 16 --out " + out.file("run"),
      "microgpt --data " + test::source_path("data/names.txt") + " --steps 1 --samples 0 --save " +
          out.file("mg.safetensors"),
  };
  for (const std::string& cmd : commands) {
    for (const char* threads : {"100000", "0", "-1", "1000000000000"})
      expect_refused(cmd + " --threads " + threads, "--threads", out.path());
  }
  EXPECT_TRUE(fs::is_empty(out.path()));
}

TEST_F(HostileInput, EvermindShapesAboveTheCeilingsAreRefusedBeforeAnythingIsWritten) {
  test::TempDir out;
  const std::string train = "train --arch evermind --threads 1 --steps 1 --data " +
                            file("corpus.txt") + " --out " + out.file("run");
  for (const auto& [flags, phrase] : std::vector<std::pair<std::string, std::string>>{
           {"--d-model 1000000", "d_model"},
           {"--hidden-dim 1000000000", "hidden_dim"},
           {"--n-layer 100000", "n_layers"},
           {"--experts 100000", "n_experts"},
           {"--experts 256 --hidden-dim 65536 --d-model 16384", "parameters"},
           {"--vocab-size 100000000", "vocab_size"},
           {"--vocab-size 100", "--vocab-size"},
           {"--hidden-dim -5", "--hidden-dim"},
           {"--seq-len 100000000", "--seq-len"},
           {"--batch 100000", "--batch"},
           {"--batch 4096 --seq-len 65536", "tokens per micro-batch"},
       }) {
    expect_refused(train + " " + flags, phrase, out.path());
  }
  EXPECT_TRUE(fs::is_empty(out.path()));  // no run directory, no tokenizer trained into one
}

TEST_F(HostileInput, UnwritableOutputsAreFoundBeforeTraining) {
  test::TempDir out;
  fs::create_directory(out.file("a_dir"));
  const std::string base = "train-gpt2 --threads 1 --steps 2 --model " +
                           test::source_path(kTinyModel) + " --tokens " +
                           test::source_path(kTokens);
  for (const auto& [flags, phrase] : std::vector<std::pair<std::string, std::string>>{
           {" --save-weights " + out.file("missing/w.safetensors"), "missing/w.safetensors"},
           {" --metrics-out " + out.file("a_dir"), "is a directory"},
           {" --metrics-out " + out.file("m.json") + " --save-weights " + out.file("a_dir"),
            "is a directory"},
           {" --metrics-out /proc/m.json", "/proc/m.json"},
       }) {
    const auto before = snapshot(out.path());
    const test::CommandResult r = run_cli(base + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_LT(r.exit_code, 128) << flags;
    EXPECT_EQ(r.out.find("step"), std::string::npos) << flags << ": trained first\n" << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << "\n" << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << flags << "\n" << r.err;
    EXPECT_EQ(snapshot(out.path()), before) << flags;
  }
}

TEST_F(HostileInput, InitWritesItsDirectoryWholeAndNeverOverOtherFiles) {
  test::TempDir out;
  const std::string init = "init --preset small-test --threads 1 --out ";
  // A directory holding something init does not write is refused and left alone.
  fs::create_directory(out.file("notes"));
  test::write_text(out.file("notes/todo.txt"), "mine");
  expect_refused(init + out.file("notes"), "todo.txt", out.path());
  expect_refused(init + out.file("no/such/parent/m"), "cannot write", out.path());
  test::write_text(out.file("plain"), "a file");
  expect_refused(init + out.file("plain"), "not a directory", out.path());
  // An earlier init's directory is replaced whole; nothing is left beside it.
  ASSERT_EQ(run_cli(init + out.file("m")).exit_code, 0);
  const test::CommandResult again = run_cli(init + out.file("m") + " --seed 3");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out.path())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"m", "notes", "plain"}));
  EXPECT_EQ(snapshot(out.file("m")).size(), 3u);
}

TEST_F(HostileInput, SymlinksPlantedAtTemporaryNamesDoNotRedirectAWrite) {
  test::TempDir out;
  const std::string evl = test::source_path("tests/fuzz/corpus/evl_checkpoint/valid_tiny_f32.evl");
  const std::string delta = out.file("out.evd"), victim = out.file("victim.txt");
  test::write_text(victim, "precious");
  // The names `<out>.tmp.<pid>` of the next pids, where the child's pid will fall.
  const pid_t me = ::getpid();
  for (pid_t p = me + 1; p < me + 3000; ++p)
    fs::create_symlink("victim.txt", delta + ".tmp." + std::to_string(p));
  const std::string export_to = "delta export --base " + evl + " --model " + evl + " --out ";
  const test::CommandResult r = run_cli(export_to + delta);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_text(victim), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(victim)));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(delta)));
  // The delta is what an export into a clean directory writes.
  test::TempDir clean;
  ASSERT_EQ(run_cli(export_to + clean.file("out.evd")).exit_code, 0);
  EXPECT_EQ(test::read_text(delta), test::read_text(clean.file("out.evd")));
}

TEST_F(HostileInput, MalformedFilesAreOneLineErrorsAndWriteNothing) {
  test::TempDir out;
  // A model directory with a broken config.json, a junk safetensors, a junk tokenizer.json.
  fs::create_directory(out.file("bad_config"));
  fs::copy_file(file("model/model.safetensors"), out.file("bad_config/model.safetensors"));
  test::write_text(out.file("bad_config/config.json"), "{\"vocab_size\": 50257, \"n_embd\": ");
  test::write_text(out.file("junk.safetensors"), std::string("\x10\0\0\0\0\0\0\0{}garbage", 18));
  test::write_text(out.file("junk_tokenizer.json"),
                   "{\"model\": {\"type\": \"BPE\", \"vocab\": 3}}");
  test::write_text(out.file("grid.json"), "{\"ids\": [[1, 2, \"x\"]]}");
  test::write_text(out.file("huge_config.json"),
                   "{\"vocab_size\": 2000000000, \"n_positions\": 1024, \"n_embd\": 65536, "
                   "\"n_layer\": 12, \"n_head\": 12}");
  const std::string grid_run = "train-gpt2 --threads 1 --steps 1 --model " +
                               test::source_path(kTinyModel) + " --metrics-out " +
                               out.file("m.json") + " --save-weights " + out.file("w.safetensors");
  for (const auto& [args, phrase] : std::vector<std::pair<std::string, std::string>>{
           {"generate --model " + out.file("bad_config") + " --prompt hi", "config.json"},
           {"generate --model " + out.file("junk.safetensors") + " --config " +
                file("model/config.json") + " --prompt hi",
            "junk.safetensors"},
           {"generate --model " + file("model") + " --tokenizer " +
                out.file("junk_tokenizer.json") + " --prompt hi",
            "junk_tokenizer.json"},
           {"generate --model " + file("model/model.safetensors") + " --config " +
                out.file("huge_config.json") + " --prompt hi",
            "huge_config.json"},
           {grid_run + " --tokens " + out.file("grid.json"), "grid.json"},
           {grid_run + " --tokens " + out.file("junk.safetensors"), "junk.safetensors"},
       }) {
    expect_refused(args, phrase, out.path());
  }
  EXPECT_FALSE(fs::exists(out.file("m.json")));
  EXPECT_FALSE(fs::exists(out.file("w.safetensors")));
}

// EvermindLM refuses an empty prompt as GPT-2 does, and has a ceiling on --max-tokens (it
// has no context end); both before the prompt is echoed.
TEST_F(HostileInput, EvermindPromptsAndLengthsAreCheckedBeforeAnythingIsPrinted) {
  const test::CommandResult trained = run_cli(
      "train --arch evermind --threads 1 --steps 1 --vocab-size 300 --seq-len 16 "
      "--d-model 8 --eval-batches 1 --data " +
      file("corpus.txt") + " --out " + file("evermind"));
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  const std::string generate = "generate --threads 1 --model " + file("evermind/latest/model.evl");
  ASSERT_EQ(run_cli(generate + " --prompt Hi --max-tokens 2").exit_code, 0);
  for (const auto& [flags, phrase] : std::vector<std::pair<std::string, std::string>>{
           {" --prompt ''", "prompt is empty"},
           {" --prompt Hi --max-tokens 2000000", "--max-tokens"},
       }) {
    const test::CommandResult r = run_cli(generate + flags);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_LT(r.exit_code, 128) << flags;
    EXPECT_EQ(r.out, "") << flags;
    // One error line (stderr also carries the load's timing line).
    const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
    EXPECT_EQ(last.rfind("tinylm: error: ", 0), 0u) << flags << "\n" << r.err;
    EXPECT_EQ(r.err.find("error"), r.err.size() - last.size() + 8) << flags << "\n" << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << flags << "\n" << r.err;
  }
}

// The stored fuzz corpora's invalid files (tests/fuzz/corpus/*/invalid_*), through the
// commands that read them: refused in one line, nothing written.
TEST_F(HostileInput, TheFuzzCorporasInvalidFilesAreRefusedByTheCli) {
  test::TempDir out;
  const std::string corpus = test::source_path("tests/fuzz/corpus/");
  const std::string good = corpus + "evl_checkpoint/valid_tiny_f32.evl";
  int cases = 0;
  for (const auto& e : fs::directory_iterator(corpus + "evl_checkpoint")) {
    if (!e.path().filename().string().starts_with("invalid_")) continue;
    const std::string bad = e.path().string();
    expect_refused(
        "delta export --base " + bad + " --model " + good + " --out " + out.file("d.evd"),
        e.path().filename().string(), out.path());
    expect_refused(
        "delta export --base " + good + " --model " + bad + " --out " + out.file("d.evd"),
        e.path().filename().string(), out.path());
    ++cases;
  }
  for (const auto& e : fs::directory_iterator(corpus + "evl_delta")) {
    if (!e.path().filename().string().starts_with("invalid_")) continue;
    expect_refused("delta apply --base " + good + " --delta " + e.path().string() + " --out " +
                       out.file("m.evl"),
                   "", out.path());
    ++cases;
  }
  for (const auto& e : fs::directory_iterator(corpus + "tokenizer_json")) {
    if (!e.path().filename().string().starts_with("invalid_")) continue;
    expect_refused("tokenize --tokenizer " + e.path().string() + " hello", "", out.path());
    ++cases;
  }
  for (const auto& e : fs::directory_iterator(corpus + "gguf")) {
    if (!e.path().filename().string().starts_with("invalid_")) continue;
    expect_refused("convert " + e.path().string() + " " + out.file("hf"),
                   e.path().filename().string(), out.path());
    ++cases;
  }
  EXPECT_GE(cases, 20);
  EXPECT_TRUE(fs::is_empty(out.path()));
}

// Issue 35, finding 2: every writer command, given a device node, a FIFO, a symlink to a
// device, a directory, a block device or a socket as its output. A character device and a
// FIFO are written in place (the node stays what it was), the others are refused in one line
// before any work.
TEST_F(HostileInput, OutputsThatAreDevicesOrFifosAreWrittenInPlaceNeverReplaced) {
  TINYLM_SKIP_UNLESS_ROOT();
  test::TempDir out;
  test::write_text(out.file("metrics.jsonl"),
                   "{\"type\":\"step\",\"step\":1,\"loss\":3.5}\n"
                   "{\"type\":\"step\",\"step\":2,\"loss\":3.25}\n");
  const std::string evl = test::source_path("tests/fuzz/corpus/evl_checkpoint/valid_tiny_f32.evl");
  const std::string train_gpt2 = "train-gpt2 --threads 1 --steps 1 --model " +
                                 test::source_path(kTinyModel) + " --tokens " +
                                 test::source_path(kTokens);
  // Each writer with OUT where its output goes.
  const std::vector<std::string> writers = {
      "convert " + file("model") + " OUT",
      "microgpt --data " + test::source_path("data/names.txt") +
          " --steps 1 --samples 0 --save OUT",
      train_gpt2 + " --save-weights OUT",
      train_gpt2 + " --metrics-out OUT",
      "plot " + out.file("metrics.jsonl") + " --out OUT",
      "delta export --base " + evl + " --model " + evl + " --out OUT",
  };
  const auto with = [](std::string cmd, const std::string& path) {
    return cmd.replace(cmd.find("OUT"), 3, path);
  };
  test::TempDir nodes;
  const std::string null = nodes.file("null"), full = nodes.file("full"), fifo = nodes.file("fifo");
  test::make_memory_device(null, test::kNullMinor);
  test::make_memory_device(full, test::kFullMinor);
  test::make_fifo(fifo);
  fs::create_symlink(null, nodes.file("to_null"));
  fs::create_directory(nodes.file("dir"));
  test::make_block_device(nodes.file("block"));
  test::make_socket(nodes.file("sock"));
  for (const std::string& w : writers) {
    SCOPED_TRACE(w);
    for (const std::string& dev : {null, nodes.file("to_null")}) {
      const test::CommandResult r = run_cli(with(w, dev));
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    EXPECT_TRUE(test::is_char_device(null));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(nodes.file("to_null"))));
    test::FifoReader reader(fifo);
    const test::CommandResult r = run_cli(with(w, fifo));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(reader.finish().size(), 20u) << "nothing came through the FIFO";
    EXPECT_TRUE(test::is_fifo(fifo));
    // A write error on the device is still an error.
    const test::CommandResult no_space = run_cli(with(w, full));
    EXPECT_EQ(no_space.exit_code, 1);
    EXPECT_NE(no_space.err.find("No space left on device"), std::string::npos) << no_space.err;
    EXPECT_TRUE(test::is_char_device(full));
    for (const auto& [name, phrase] : std::vector<std::pair<std::string, std::string>>{
             {"dir", "is a directory"}, {"block", "is a block device"}, {"sock", "is a socket"}})
      expect_refused(with(w, nodes.file(name)), phrase, nodes.path());
  }
  // init writes a directory: any node at its target is refused and left alone.
  expect_refused("init --preset small-test --threads 1 --out " + null, "not a directory",
                 nodes.path());
  EXPECT_TRUE(test::is_char_device(null));
}

// Runs the CLI with stdout redirected by the shell (">/dev/full", ">&-"), stderr captured.
test::CommandResult run_cli_stdout_to(const std::string& args, const std::string& redirect) {
  return test::run_shell("{ " + std::string(TINYLM_CLI_PATH) + " " + args + " " + redirect + "; }");
}

// Issue 35, finding 5: with stdout on a full device or closed, every command that prints
// exits 1 with one error line naming stdout, instead of 0 with its output lost.
TEST_F(HostileInput, AFailedWriteToStdoutIsAnErrorNotSilentLoss) {
  test::TempDir out;
  test::write_text(out.file("metrics.jsonl"), "{\"type\":\"step\",\"step\":1,\"loss\":3.5}\n");
  const std::string evl = test::source_path("tests/fuzz/corpus/evl_checkpoint/valid_tiny_f32.evl");
  const std::string model = " --threads 1 --model " + file("model");
  const std::vector<std::string> commands = {
      "--help",
      "--version",
      "help generate",
      "completion bash",
      "tokenize 'Hello world'",
      "generate" + model + " --prompt Hi --max-tokens 4",
      "generate" + model + " --prompts " + file("prompts.txt") + " --max-tokens 2",
      "perplexity" + model + " --file " + file("corpus.txt") + " --limit 16",  // (one window)
      "microgpt --data " + test::source_path("data/names.txt") + " --steps 2 --samples 2",
      "init --preset small-test --threads 1 --out " + out.file("init"),
      "convert " + file("model") + " " + out.file("m.gguf"),
      "plot " + out.file("metrics.jsonl") + " --out " + out.file("p.svg"),
      "delta export --base " + evl + " --model " + evl + " --out " + out.file("d.evd"),
      "train-gpt2 --threads 1 --steps 1 --model " + test::source_path(kTinyModel) + " --tokens " +
          test::source_path(kTokens),
  };
  test::write_text(file("prompts.txt"), "Hi\nThere\n");
  for (const std::string& cmd : commands) {
    ASSERT_EQ(run_cli(cmd).exit_code, 0) << cmd << ": fails even with a working stdout";
    for (const std::string redirect : {">/dev/full", ">&-"}) {
      const test::CommandResult r = run_cli_stdout_to(cmd, redirect);
      EXPECT_EQ(r.exit_code, 1) << cmd << " " << redirect << "\n" << r.err;
      const size_t at = r.err.find("tinylm: error: stdout: write failed");
      EXPECT_NE(at, std::string::npos) << cmd << " " << redirect << "\n" << r.err;
      EXPECT_EQ(r.err.find("error", at + 14), std::string::npos) << "more than one error\n"
                                                                 << r.err;
      EXPECT_EQ(r.err.back(), '\n');
      EXPECT_EQ(r.err.find('\n', at), r.err.size() - 1) << "the error is not the last line\n"
                                                        << r.err;
    }
  }
}

// A streaming command stops at the first lost piece instead of generating everything: no
// timing line after the error, which is printed only once every token is made.
TEST_F(HostileInput, GenerateStopsAtTheFirstFailedWriteToStdout) {
  const test::CommandResult r = run_cli_stdout_to(
      "generate --threads 1 --model " + file("model") + " --prompt Hi --max-tokens 10000",
      ">/dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("stdout: write failed: No space left on device"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("decode"), std::string::npos) << "generated to the end:\n" << r.err;
}

// Issue 35, finding 6: every file a command reads whole is checked for its type and size
// first. A character device (/dev/zero, /dev/urandom: nodes of the test's own) is refused
// before it is opened, a regular file over the limit before it is read, a pipe once it passes
// the limit; /dev/null reads as empty.
TEST_F(HostileInput, ReadsAreBoundedAndRefuseDevices) {
  TINYLM_SKIP_UNLESS_ROOT();
  test::TempDir nodes;
  const std::string zero = nodes.file("zero"), urandom = nodes.file("urandom");
  test::make_memory_device(zero, test::kZeroMinor);
  test::make_memory_device(urandom, 9);
  // One byte over io::kMaxTextBytes (1 GiB), sparse: no disk is used. Not in the watched
  // directory, whose snapshots read every regular file.
  test::TempDir sparse;
  const std::string big = sparse.file("big.txt");
  test::write_text(big, "x");
  fs::resize_file(big, (uint64_t{1} << 30) + 1);
  const std::string model = " --threads 1 --model " + file("model");
  const std::vector<std::string> readers = {
      "perplexity" + model + " --file IN",        "generate" + model + " --prompt-file IN",
      "generate" + model + " --prompts IN",       "tokenize --file IN",
      "microgpt --steps 1 --samples 0 --data IN",
  };
  for (const std::string& r : readers) {
    for (const auto& [in, phrase] : std::vector<std::pair<std::string, std::string>>{
             {zero, "zero: is a character device"},
             {urandom, "urandom: is a character device"},
             {big, "big.txt: more than 1 GiB"},
             {nodes.path().string(), "is a directory"}}) {
      std::string cmd = r;
      cmd.replace(cmd.find("IN"), 2, in);
      expect_refused(cmd, phrase, nodes.path());
    }
  }
  // stdin: a device refused, a pipe refused once past the limit.
  const std::string tokenize = std::string(TINYLM_CLI_PATH) + " tokenize";
  for (const auto& [cmd, phrase] : std::vector<std::pair<std::string, std::string>>{
           {"{ " + tokenize + " <" + zero + "; }", "stdin: is a character device"},
           {"{ head -c 1073741825 " + big + " | " + tokenize + "; }", "stdin: more than 1 GiB"},
           {"{ " + tokenize + " --file - <" + urandom + "; }", "stdin: is a character device"}}) {
    const test::CommandResult r = test::run_shell(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << cmd << "\n" << r.err;
  }
  // /dev/null (a node of ours) is an empty text, not a device error.
  const std::string null = nodes.file("null");
  test::make_memory_device(null, test::kNullMinor);
  const test::CommandResult empty = run_cli("tokenize --file " + null);
  EXPECT_EQ(empty.err.find("character device"), std::string::npos) << empty.err;
}

// Issue 35, finding 13: a flag given a value out of its range is a usage error (exit 2), not
// silently its default.
TEST_F(HostileInput, OutOfRangeValuesAreUsageErrorsNotDefaults) {
  const std::string ppl =
      "perplexity --threads 1 --model " + file("model") + " --file " + file("corpus.txt");
  const std::string serve = "serve --threads 1 --port 0 --model " + file("model");
  for (const auto& [flags, phrase] : std::vector<std::pair<std::string, std::string>>{
           {ppl + " --stride 0", "--stride"},
           {ppl + " --stride -3", "--stride"},
           {ppl + " --context 0", "--context"},
           {ppl + " --context 1", "--context"},
           {ppl + " --context -5", "--context"},
           {ppl + " --limit -1", "--limit"},
           {serve + " --ctx 0", "--ctx"},
           {serve + " --ctx -1", "--ctx"},
           {serve + " --ctx 010", "--ctx"},
       }) {
    const test::CommandResult r = run_cli(flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
    EXPECT_EQ(r.out, "") << flags;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << "\n" << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << flags << "\n" << r.err;
  }
}

// The ceilings themselves: each size at its ceiling passes, one above is refused naming the
// field, and the parameter count the total is checked against is the layout's.
TEST(EvermindLimits, EachSizeHasACeilingAndTheTotalIsBounded) {
  using L = evermind::Limits;
  evermind::Config small;
  small.vocab_size = 300;
  small.d_model = 8;
  small.hidden_dim = 16;
  small.n_layers = 2;
  small.n_experts = 3;
  small.top_k = 2;
  small.conv_kernel = 4;
  EXPECT_EQ(evermind::param_count(small),
            static_cast<int64_t>(evermind::param_layout(small).size()));
  struct Field {
    int64_t evermind::Config::*member;
    int64_t limit;
    const char* name;
  };
  for (const Field& f : {Field{&evermind::Config::vocab_size, L::vocab_size, "vocab_size"},
                         Field{&evermind::Config::d_model, L::d_model, "d_model"},
                         Field{&evermind::Config::n_layers, L::n_layers, "n_layers"},
                         Field{&evermind::Config::conv_kernel, L::conv_kernel, "conv_kernel"},
                         Field{&evermind::Config::hidden_dim, L::hidden_dim, "hidden_dim"},
                         Field{&evermind::Config::n_experts, L::n_experts, "n_experts"}}) {
    evermind::Config c = small;
    c.*f.member = f.limit;
    evermind::validate(c);  // at the ceiling (these small other sizes keep the total low)
    EXPECT_EQ(evermind::param_count(c), static_cast<int64_t>(evermind::param_layout(c).size()))
        << f.name;
    c.*f.member = f.limit + 1;
    test::expect_error([&] { evermind::validate(c); }, {f.name, "implausibly large"});
    c.*f.member = int64_t{1} << 40;
    test::expect_error([&] { evermind::validate(c); }, {f.name, "implausibly large"});
  }
  evermind::Config big = small;  // every size within its ceiling, too many in all
  big.d_model = 4096;
  big.hidden_dim = 16384;
  big.n_experts = 16;
  big.n_layers = 8;
  test::expect_error([&] { evermind::validate(big); }, {"parameters", "implausibly many"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
