// The tinylm executable: help, exit codes and one-line errors for bad input.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::run_cli;

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// A failing command prints exactly one line to stderr, naming the problem, and exits non-zero.
void expect_one_line_error(const std::string& args, const std::string& phrase) {
  const test::CommandResult r = run_cli(args);
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_EQ(count_lines(r.err), 1) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << args << "\nstderr: " << r.err;
  EXPECT_LT(r.exit_code, 128) << "crashed: " << args;
}

TEST(Cli, HelpListsSubcommandsAndFlags) {
  const test::CommandResult top = run_cli("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("microgpt"), std::string::npos);
  const test::CommandResult sub = run_cli("microgpt --help");
  EXPECT_EQ(sub.exit_code, 0);
  for (const char* flag :
       {"--data", "--steps", "--n-layer", "--n-embd", "--n-head", "--block-size", "--lr",
        "--temperature", "--samples", "--seed", "--engine", "--save", "--load", "--threads"}) {
    EXPECT_NE(sub.out.find(flag), std::string::npos) << flag;
  }
}

TEST(Cli, MicrogptPrintsItsTranscriptToStdoutAndTimingsToStderr) {
  const test::CommandResult r =
      run_cli("microgpt --data " + test::source_path("data/names.txt") + " --steps 5 --samples 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("num docs: 32033\nvocab size: 27\nnum params: 4192\nstep    1 /    5 | loss ", 0),
      0u);
  EXPECT_NE(r.out.find("\n--- inference (new, hallucinated names) ---\nsample  1: "),
            std::string::npos);
  EXPECT_NE(r.err.find("train"), std::string::npos);
}

TEST(Cli, BadInputIsAOneLineError) {
  test::TempDir dir;
  const std::string names = " --data " + test::source_path("data/names.txt");
  expect_one_line_error("microgpt --data " + dir.file("missing.txt"), "missing.txt");
  test::write_text(dir.file("empty.txt"), "");
  expect_one_line_error("microgpt --data " + dir.file("empty.txt"), "no documents");
  test::write_text(dir.file("bad.txt"), "emma\n\xff\xfe\n");
  expect_one_line_error("microgpt --data " + dir.file("bad.txt"), "UTF-8");
  expect_one_line_error("microgpt" + names + " --n-embd 16 --n-head 3", "does not divide");
  expect_one_line_error("microgpt" + names + " --n-embd 0", "--n-embd");
  expect_one_line_error("microgpt" + names + " --n-layer -1", "--n-layer");
  expect_one_line_error("microgpt" + names + " --block-size 0", "--block-size");
  expect_one_line_error("microgpt" + names + " --steps -3", "--steps");
  expect_one_line_error("microgpt" + names + " --temperature 0", "temperature");
  expect_one_line_error("microgpt" + names + " --engine vector", "engine");
  expect_one_line_error("microgpt" + names + " --steps many", "steps");
  expect_one_line_error("microgpt" + names + " --load " + dir.file("none.safetensors"),
                        "none.safetensors");
  test::write_text(dir.file("junk.safetensors"), "not a checkpoint at all");
  expect_one_line_error("microgpt" + names + " --load " + dir.file("junk.safetensors"),
                        "junk.safetensors");
  expect_one_line_error("frobnicate", "frobnicate");
}

TEST(Cli, LoadRejectsACheckpointOfAnotherShape) {
  test::TempDir dir;
  const std::string names = " --data " + test::source_path("data/names.txt");
  const std::string ck = dir.file("m.safetensors");
  ASSERT_EQ(run_cli("microgpt" + names + " --steps 1 --samples 0 --save " + ck).exit_code, 0);
  expect_one_line_error("microgpt" + names + " --n-embd 8 --load " + ck, "differs");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
