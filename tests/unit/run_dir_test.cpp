// The run directory: checkpoints are written into .step-N.tmp and committed by rename, `latest`
// follows the newest commit, old checkpoints are pruned to `keep`, and a crash at any point
// (simulated by running commit_checkpoint's parts partway) leaves the newest complete
// checkpoint findable by checkpoints().
#include "tinylm/train/run_dir.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using test::expect_error;
using train::RunDir;

std::vector<int64_t> steps(const RunDir& run) {
  std::vector<int64_t> out;
  for (const train::Checkpoint& c : run.checkpoints()) out.push_back(c.step);
  return out;
}

std::string latest_target(const RunDir& run) {
  return fs::read_symlink(run.latest_link()).string();
}

// A checkpoint as a trainer writes it: a file and a subdirectory with a file.
std::string write_checkpoint(RunDir& run, int64_t step) {
  const std::string tmp = run.begin_checkpoint(step);
  test::write_text(tmp + "/train_state.bin", "state " + std::to_string(step));
  fs::create_directory(tmp + "/model");
  test::write_text(tmp + "/model/config.json", "{}");
  return tmp;
}

std::vector<std::string> names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RunDir, CreatesTheRootAndNamesItsFiles) {
  test::TempDir dir;
  const std::string root = dir.file("runs/a");
  EXPECT_FALSE(RunDir::looks_like_run(root));
  RunDir run(root + "/");  // a trailing slash is dropped
  EXPECT_TRUE(fs::is_directory(root));
  EXPECT_EQ(run.root(), root);
  EXPECT_EQ(run.run_json(), root + "/run.json");
  EXPECT_EQ(run.metrics_jsonl(), root + "/metrics.jsonl");
  EXPECT_EQ(run.tokens_bin(), root + "/tokens.bin");
  EXPECT_EQ(run.latest_link(), root + "/latest");
  EXPECT_EQ(run.checkpoint_path(100), root + "/step-00000100");
  EXPECT_EQ(run.checkpoint_path(123456789), root + "/step-123456789");
  EXPECT_EQ(run.temp_path(7), root + "/.step-00000007.tmp");
  EXPECT_TRUE(run.checkpoints().empty());
  EXPECT_FALSE(RunDir::looks_like_run(root));
  test::write_text(run.run_json(), "{}");
  EXPECT_TRUE(RunDir::looks_like_run(root));
  RunDir again(root);  // opening an existing run is fine
  EXPECT_TRUE(again.checkpoints().empty());
}

TEST(RunDir, RootMustBeAWritableDirectory) {
  test::TempDir dir;
  const std::string file = dir.file("file");
  test::write_text(file, "x");
  expect_error([&] { RunDir run(file); }, {file + ": exists and is not a directory"});
  const std::string under = file + "/run";
  expect_error([&] { RunDir run(under); }, {under + ": cannot create the run directory"});
  expect_error([&] { RunDir run(""); }, {"empty path"});
  // /proc is read-only even for root.
  if (fs::is_directory("/proc/self")) {
    expect_error([&] { RunDir run("/proc/self/tinylm-run"); },
                 {"/proc/self/tinylm-run: cannot create the run directory"});
  }
}

TEST(RunDir, CommitRenamesPointsLatestAndSyncs) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  const std::string tmp = write_checkpoint(run, 100);
  EXPECT_EQ(tmp, run.root() + "/.step-00000100.tmp");
  EXPECT_TRUE(run.checkpoints().empty());  // not committed yet
  EXPECT_EQ(run.commit_checkpoint(100, 3), run.checkpoint_path(100));
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_EQ(test::read_text(run.checkpoint_path(100) + "/train_state.bin"), "state 100");
  EXPECT_EQ(test::read_text(run.checkpoint_path(100) + "/model/config.json"), "{}");
  ASSERT_TRUE(fs::is_symlink(run.latest_link()));
  EXPECT_EQ(latest_target(run), "step-00000100");  // relative
  EXPECT_EQ(test::read_text(run.latest_link() + "/train_state.bin"), "state 100");
  const std::vector<train::Checkpoint> c = run.checkpoints();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].step, 100);
  EXPECT_EQ(c[0].path, run.checkpoint_path(100));
  EXPECT_EQ(names(run.root()), (std::vector<std::string>{"latest", "step-00000100"}));
}

TEST(RunDir, PrunesToTheNewestKeep) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  for (int64_t step : {100, 200, 300, 400, 500}) {
    write_checkpoint(run, step);
    run.commit_checkpoint(step, 2);
    EXPECT_EQ(latest_target(run), fs::path(run.checkpoint_path(step)).filename());
  }
  EXPECT_EQ(steps(run), (std::vector<int64_t>{400, 500}));
  // Ordered by step, not by name: 9-digit steps sort after 8-digit ones.
  write_checkpoint(run, 100000000);
  run.commit_checkpoint(100000000, 2);
  EXPECT_EQ(steps(run), (std::vector<int64_t>{500, 100000000}));
  EXPECT_EQ(latest_target(run), "step-100000000");
}

TEST(RunDir, KeepOneLeavesOnlyTheNewest) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  for (int64_t step : {10, 20, 30}) {
    write_checkpoint(run, step);
    run.commit_checkpoint(step, 1);
    EXPECT_EQ(steps(run), std::vector<int64_t>{step});
  }
  EXPECT_EQ(names(run.root()), (std::vector<std::string>{"latest", "step-00000030"}));
  write_checkpoint(run, 40);
  expect_error([&] { run.commit_checkpoint(40, 0); }, {run.root() + ": ", "at least 1 (got 0)"});
}

TEST(RunDir, ACommittedStepIsNeverPrunedAndASameStepIsReplaced) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  for (int64_t step : {100, 200, 300}) {
    write_checkpoint(run, step);
    run.commit_checkpoint(step, 5);
  }
  // Resuming from 100 (say 200 and 300 did not load) and committing 150 with keep=1 keeps
  // 150, which `latest` names, besides the newest.
  write_checkpoint(run, 150);
  run.commit_checkpoint(150, 1);
  EXPECT_EQ(steps(run), (std::vector<int64_t>{150, 300}));
  EXPECT_EQ(latest_target(run), "step-00000150");
  // Committing 300 again replaces the old directory.
  const std::string tmp = run.begin_checkpoint(300);
  test::write_text(tmp + "/train_state.bin", "new 300");
  run.commit_checkpoint(300, 1);
  EXPECT_EQ(steps(run), std::vector<int64_t>{300});
  EXPECT_EQ(test::read_text(run.checkpoint_path(300) + "/train_state.bin"), "new 300");
  EXPECT_FALSE(fs::exists(run.checkpoint_path(300) + "/model"));
}

TEST(RunDir, BeginRemovesAStaleTemporary) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  write_checkpoint(run, 100);  // a crash before commit
  const std::string tmp = run.begin_checkpoint(100);
  EXPECT_TRUE(fs::is_directory(tmp));
  EXPECT_TRUE(fs::is_empty(tmp));
  expect_error([&] { run.commit_checkpoint(200, 1); },
               {run.temp_path(200) + ": no checkpoint in progress"});
  expect_error([&] { run.begin_checkpoint(-1); }, {run.root() + ": checkpoint step must be >= 0"});
}

TEST(RunDir, RemovesStaleTemporariesOnly) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  write_checkpoint(run, 100);
  run.commit_checkpoint(100, 3);
  write_checkpoint(run, 200);                                        // crashed mid-write
  test::write_text(run.root() + "/.step-00000300.tmp", "x");         // even a file
  fs::create_symlink("step-00000100", run.root() + "/.latest.tmp");  // crashed in point_latest
  test::write_text(run.run_json(), "{}");
  test::write_text(run.metrics_jsonl(), "");
  test::write_text(run.root() + "/.stepfile", "not ours");
  EXPECT_EQ(steps(run), std::vector<int64_t>{100});  // temporaries are not checkpoints
  EXPECT_EQ(run.remove_stale_temporaries(), 3);
  EXPECT_EQ(names(run.root()), (std::vector<std::string>{".stepfile", "latest", "metrics.jsonl",
                                                         "run.json", "step-00000100"}));
  EXPECT_EQ(run.remove_stale_temporaries(), 0);
}

TEST(RunDir, OnlyCanonicalStepDirectoriesAreCheckpoints) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  write_checkpoint(run, 100);
  run.commit_checkpoint(100, 3);
  fs::create_directory(run.root() + "/step-200");           // not 8 digits
  fs::create_directory(run.root() + "/step-0000030x");      // not a number
  fs::create_directory(run.root() + "/step--0000001");      // negative
  fs::create_directory(run.root() + "/step-000000400");     // a leading zero too many
  test::write_text(run.root() + "/step-00000500", "file");  // not a directory
  fs::create_directory_symlink("step-00000100", run.root() + "/step-00000600");  // a symlink
  fs::create_directory(run.root() + "/step-99999999999999999999");               // overflows int64
  EXPECT_EQ(steps(run), std::vector<int64_t>{100});
}

TEST(RunDir, ACrashBetweenRenameAndLatestLeavesTheNewestFindable) {
  test::TempDir dir;
  const std::string root = dir.file("run");
  {
    RunDir run(root);
    write_checkpoint(run, 100);
    run.commit_checkpoint(100, 2);
    write_checkpoint(run, 200);
    run.publish_checkpoint(200);  // the crash: `latest` not yet replaced, nothing pruned
  }
  RunDir resumed(root);  // the run starts again
  EXPECT_EQ(latest_target(resumed), "step-00000100");
  const std::vector<train::Checkpoint> c = resumed.checkpoints();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.back().step, 200);
  EXPECT_EQ(test::read_text(c.back().path + "/train_state.bin"), "state 200");
  // And the run carries on normally from there.
  EXPECT_EQ(resumed.remove_stale_temporaries(), 0);
  write_checkpoint(resumed, 300);
  resumed.commit_checkpoint(300, 2);
  EXPECT_EQ(steps(resumed), (std::vector<int64_t>{200, 300}));
  EXPECT_EQ(latest_target(resumed), "step-00000300");
}

TEST(RunDir, ACrashBeforePruningOrMidLatestIsHarmless) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  for (int64_t step : {100, 200, 300}) {
    write_checkpoint(run, step);
    run.publish_checkpoint(step);
    run.point_latest(step);  // crash before prune
  }
  EXPECT_EQ(steps(run), (std::vector<int64_t>{100, 200, 300}));
  EXPECT_EQ(latest_target(run), "step-00000300");
  // A half-made `latest` (the temporary symlink exists) does not stop the next one.
  fs::create_symlink("step-00000100", run.root() + "/.latest.tmp");
  write_checkpoint(run, 400);
  run.commit_checkpoint(400, 2);
  EXPECT_EQ(steps(run), (std::vector<int64_t>{300, 400}));
  EXPECT_EQ(latest_target(run), "step-00000400");
  EXPECT_FALSE(fs::exists(fs::symlink_status(run.root() + "/.latest.tmp")));
}

TEST(RunDir, LatestInTheWayIsAnError) {
  test::TempDir dir;
  RunDir run(dir.file("run"));
  fs::create_directories(run.latest_link() + "/x");  // a real, non-empty directory
  write_checkpoint(run, 100);
  expect_error([&] { run.commit_checkpoint(100, 1); }, {run.latest_link() + ": cannot replace"});
  EXPECT_EQ(steps(run), std::vector<int64_t>{100});  // the checkpoint itself is committed
}

TEST(FsyncPath, SyncsFilesAndDirectoriesAndNamesTheMissing) {
  test::TempDir dir;
  const std::string file = dir.file("f");
  test::write_text(file, "x");
  EXPECT_NO_THROW(io::fsync_path(file));
  EXPECT_NO_THROW(io::fsync_path(dir.path().string()));
  expect_error([&] { io::fsync_path(dir.file("missing")); },
               {dir.file("missing") + ": cannot open to sync"});
  EXPECT_EQ(io::parent_dir("a/b/c"), "a/b");
  EXPECT_EQ(io::parent_dir("c"), ".");
  EXPECT_EQ(io::parent_dir("/c"), "/");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
