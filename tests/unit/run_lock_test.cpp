// One process owns a run directory (train/run_lock.h): a second `train --out` or `--resume` on a
// run that is training is refused, naming the holder, with the run's files untouched; a lock left
// by a killed process does not block.
#include "tinylm/train/run_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "test_util.h"
#include "tinylm/train/run_dir.h"

extern char** environ;

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using train::RunLock;

TEST(RunLock, HeldLockIsRefusedNamingThePidAndFreedWhenReleased) {
  TempDir tmp;
  const std::string root = tmp.path().string();
  RunLock::check_free(root);  // no lock file: free, and none is made
  EXPECT_FALSE(fs::exists(tmp.file(".lock")));
  {
    RunLock held = RunLock::acquire(root);
    EXPECT_EQ(read_text(tmp.file(".lock")), std::to_string(::getpid()) + "\n");
    const std::string pid = "pid " + std::to_string(::getpid());
    expect_error([&] { RunLock::check_free(root); }, {root, "in use", pid});
    expect_error([&] { (void)RunLock::acquire(root); }, {root, "in use", pid});
  }
  RunLock::check_free(root);  // released with its holder; the file stays and does not block
  const RunLock again = RunLock::acquire(root);
}

// A file's identity and bytes, to tell "untouched" from "rewritten with the same bytes".
struct FileSeen {
  ino_t inode = 0;
  std::string bytes;
};

FileSeen seen(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {st.st_ino, read_text(path)};
}

// Starts `tinylm ARGS...` with its output in files of dir; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> all = {TINYLM_CLI_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&io, 1, (dir + "/first.out").c_str(), O_WRONLY | O_CREAT, 0644);
  posix_spawn_file_actions_addopen(&io, 2, (dir + "/first.err").c_str(), O_WRONLY | O_CREAT, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &io, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&io);
  EXPECT_EQ(rc, 0);
  return pid;
}

// Polls until ready() or the process has exited or 120 s (the sanitizer build is slow) pass.
template <class F>
bool wait_for(pid_t pid, F&& ready) {
  for (int i = 0; i < 1200; ++i) {
    if (ready()) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(RunLock, SecondTrainOnARunningRunIsRefusedAndAKilledRunResumes) {
  TempDir tmp;
  const std::string data = tmp.file("text.txt"), run = tmp.file("run");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 40000));
  const std::vector<std::string> flags = {
      "--arch",       "gpt2", "--preset",     "small-test", "--seq-len",      "32",
      "--batch",      "2",    "--eval-every", "0",          "--eval-batches", "1",
      "--save-every", "10",   "--threads",    "1",          "--data",         data};
  std::vector<std::string> first = {"train"};
  first.insert(first.end(), flags.begin(), flags.end());
  first.insert(first.end(), {"--steps", "100000000", "--out", run});
  const pid_t pid = spawn_cli(first, tmp.path().string());
  const std::string pid_line = std::to_string(pid) + "\n";
  const bool running = wait_for(pid, [&] {
    return fs::exists(run + "/tokens.bin") && fs::exists(run + "/metrics.jsonl") &&
           read_text(run + "/.lock") == pid_line;
  });
  if (!running) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL() << "the first run did not start: " << read_text(tmp.file("first.err"));
  }
  const FileSeen config = seen(run + "/run.json"), tokens = seen(run + "/tokens.bin");
  const FileSeen metrics = seen(run + "/metrics.jsonl");

  std::string again;
  for (const std::string& f : flags) again += " " + f;
  const CommandResult out = run_cli("train" + again + " --steps 5 --out " + run);
  const CommandResult resume = run_cli("train --resume " + run);
  for (const CommandResult& r : {out, resume}) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("in use by another tinylm process (pid " + std::to_string(pid)),
              std::string::npos)
        << r.err;
  }
  const FileSeen config_after = seen(run + "/run.json"), tokens_after = seen(run + "/tokens.bin");
  const FileSeen metrics_after = seen(run + "/metrics.jsonl");
  EXPECT_EQ(config_after.inode, config.inode);
  EXPECT_EQ(config_after.bytes, config.bytes);
  EXPECT_EQ(tokens_after.inode, tokens.inode);
  EXPECT_EQ(tokens_after.bytes, tokens.bytes);
  EXPECT_EQ(metrics_after.inode, metrics.inode) << "metrics.jsonl was replaced";
  EXPECT_EQ(metrics_after.bytes.substr(0, metrics.bytes.size()), metrics.bytes);

  // Killed, it leaves its lock file behind; the kernel has dropped the lock itself.
  const bool checkpointed =
      wait_for(pid, [&] { return !train::RunDir(run).checkpoints().empty(); });
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(checkpointed) << read_text(tmp.file("first.err"));
  ASSERT_TRUE(fs::exists(run + "/.lock"));
  const int64_t last = train::RunDir(run).checkpoints().back().step;
  const CommandResult resumed =
      run_cli("train --resume " + run + " --steps " + std::to_string(last + 2));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("trained " + std::to_string(last + 2) + " steps"), std::string::npos)
      << resumed.out;
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
