// Data-parallel training over MPI processes on this machine (`mpirun -np P`): the shards give
// the same bits however they are spread over processes and devices, only the first process
// prints and writes, a process that dies ends the run with its last checkpoint intact, and a
// run resumes exactly on another process count with the same number of shards. Skipped, with
// the reason, where tinylm was built without MPI or mpirun is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_util.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::run_cli;
using test::run_shell;

// Open MPI refuses root unless told, and binding 2 processes to cores of a busy 2-core machine
// would serialize them. In the sanitizer build, leak checking is off for the processes mpirun
// starts: Open MPI's plugins keep allocations to exit that LeakSanitizer cannot attribute (no
// module, no frames), while the same training code is leak-checked in one process elsewhere.
const std::string kMpirun =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
    "ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:detect_leaks=0\" mpirun --bind-to none";

std::string skip_reason() {
  if (run_cli("--version").out.find("mpi: yes") == std::string::npos)
    return "tinylm was built without MPI (install libopenmpi-dev and rebuild)";
  if (run_shell("command -v mpirun").exit_code != 0) return "mpirun is not installed";
  return "";
}

#define SKIP_WITHOUT_MPI() \
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why

test::CommandResult mpirun(int processes, const std::string& args) {
  return run_shell(kMpirun + " -np " + std::to_string(processes) + " " + TINYLM_CLI_PATH + " " +
                   args);
}

// The metrics JSON without its wall-clock times.
nlohmann::json metrics_without_ms(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(test::read_text(path));
  for (auto& r : j["records"]) r.erase("ms");
  return j;
}

std::string train_gpt2_args(int devices, const std::string& metrics, int threads = 1,
                            const std::string& overlap = "auto") {
  return "train-gpt2 --threads " + std::to_string(threads) + " --overlap " + overlap +
         " --steps 3 --dropout 0.1 --model " +
         test::source_path("tests/fixtures/gpt2/tiny/model.safetensors") + " --tokens " +
         test::source_path("tests/fixtures/gpt2/train/tokens.json") + " --devices " +
         std::to_string(devices) + " --metrics-out " + metrics;
}

TEST(CliMpi, TrainGpt2SameBitsHoweverTheShardsAreSpread) {
  SKIP_WITHOUT_MPI();
  test::TempDir dir;
  for (const int shards : {2, 4}) {
    // One process on two threads, the others on one each: the thread count changes nothing.
    const std::string alone = dir.file("1x" + std::to_string(shards) + ".json");
    const test::CommandResult one = run_cli(train_gpt2_args(shards, alone, 2));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    for (int processes = 2; processes <= shards; processes *= 2) {
      const int devices = shards / processes;
      const std::string name = std::to_string(processes) + "x" + std::to_string(devices);
      // The exchange during the backward (2 processes) or after it (4): the same bits.
      const test::CommandResult r = mpirun(
          processes,
          train_gpt2_args(devices, dir.file(name + ".json"), 1, processes == 2 ? "on" : "off"));
      ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
      // Only the first process prints: the same bytes (the times go to stderr).
      EXPECT_EQ(r.out, one.out) << name;
      EXPECT_EQ(metrics_without_ms(dir.file(name + ".json")), metrics_without_ms(alone)) << name;
      EXPECT_EQ(metrics_without_ms(dir.file(name + ".json"))["devices"], shards);
    }
  }
}

// (A vocabulary of the text's characters: GPT-2's 50,257 tokens would make the output layer
// nearly all of the work, and the sanitizer build's run a minute long.)
std::string train_args(const std::string& out, int devices, int steps) {
  return "train --arch gpt2 --preset small-test --tokenizer char --data " +
         test::source_path("data/tinyshakespeare.txt") + " --out " + out +
         " --batch 4 --seq-len 32 --dropout 0.1 --eval-every 2 --eval-batches 2 --save-every 2 "
         "--threads 1 --devices " +
         std::to_string(devices) + " --steps " + std::to_string(steps);
}

std::string resume_args(const std::string& run, int devices, int steps) {
  return "train --resume " + run + " --threads 1 --devices " + std::to_string(devices) +
         " --steps " + std::to_string(steps);
}

// metrics.jsonl without the wall-clock fields (and the communication time of MPI runs, which
// one process does not have).
std::string losses(const std::string& run) {
  const std::string text =
      std::regex_replace(test::read_text(run + "/metrics.jsonl"),
                         std::regex(R"("tok_per_s":[^,]*,"elapsed_s":[^,]*,)"), "");
  return std::regex_replace(text, std::regex(R"(,"comm_s":[^,}]*)"), "");
}

TEST(CliMpi, TrainOnTwoProcessesMatchesTwoDevicesAndResumesOnOne) {
  SKIP_WITHOUT_MPI();
  test::TempDir dir;
  const std::string alone = dir.file("alone"), spread = dir.file("spread");
  ASSERT_EQ(run_cli(train_args(alone, 2, 6)).exit_code, 0);
  const test::CommandResult r = mpirun(2, train_args(spread, 1, 4) + " --overlap on");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // the first process's
  EXPECT_NE(test::read_text(spread + "/metrics.jsonl").find("\"comm_s\":"), std::string::npos);
  // Resumed in one process: 2 devices keep the 2 shards; 1 device would not.
  const test::CommandResult wrong = run_cli(resume_args(spread, 1, 6));
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("trained on 2 shards"), std::string::npos) << wrong.err;
  const test::CommandResult resumed = run_cli(resume_args(spread, 2, 6));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(losses(spread), losses(alone));
  EXPECT_EQ(test::read_text(spread + "/latest/model.safetensors"),
            test::read_text(alone + "/latest/model.safetensors"));
}

// A process killed mid-run ends the run within seconds (no hang); the last checkpoint stands,
// and the run resumes from it to the same numbers as a run never interrupted.
TEST(CliMpi, AProcessThatDiesEndsTheRunAndItResumes) {
  SKIP_WITHOUT_MPI();
  test::TempDir dir;
  const std::string alone = dir.file("alone"), spread = dir.file("spread");
  ASSERT_EQ(run_cli(train_args(alone, 2, 6)).exit_code, 0);
  const test::CommandResult killed =
      run_shell(kMpirun +
                " -np 2 sh -c '[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && export "
                "TINYLM_TEST_CRASH=step:3; exec " +
                TINYLM_CLI_PATH + " " + train_args(spread, 1, 6) + "'");
  EXPECT_NE(killed.exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(spread + "/step-00000002/train_state.bin"));
  EXPECT_FALSE(std::filesystem::exists(spread + "/step-00000004"));
  const test::CommandResult resumed = mpirun(2, resume_args(spread, 1, 6));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(losses(spread), losses(alone));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
