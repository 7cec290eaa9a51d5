// io::AtomicFile, io::StagedDir and io::probe_output: outputs that cannot be hijacked through
// planted symlinks, that a kill leaves whole, whose orphans are cleaned up, whose problems
// show before any work, and that never put a regular file where a device or a FIFO was.
#include "tinylm/io/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "special_files.h"
#include "test_util.h"
#include "tinylm/io/output_target.h"
#include "tinylm/io/staged_dir.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using test::expect_error;
using test::read_text;
using test::write_text;

void write_atomic(const std::string& path, const std::string& text) {
  io::write_file_atomic(path, std::as_bytes(std::span(text.data(), text.size())));
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A pid that belonged to a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// Runs body in a child process, which must kill itself with SIGKILL, as a crash would.
template <class F>
void in_killed_child(F&& body) {
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      body();
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);  // the body returned: not the crash the test needs
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
}

TEST(AtomicFile, SymlinksPlantedAtTemporaryNamesAreNeverWrittenThrough) {
  test::TempDir dir;
  const std::string victim = dir.file("victim.txt"), out = dir.file("out.bin");
  write_text(victim, "precious");
  // Every name the old scheme (out.tmp.<pid>) could pick for this process and the next ones.
  const pid_t me = ::getpid();
  for (pid_t p = std::max<pid_t>(2, me - 50); p < me + 200; ++p)
    fs::create_symlink("victim.txt", out + ".tmp." + std::to_string(p));
  write_atomic(out, "new contents");
  EXPECT_EQ(read_text(victim), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(victim)));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out)));
  EXPECT_EQ(read_text(out), "new contents");
}

TEST(AtomicFile, AnOutputThatIsASymlinkIsReplacedNotFollowed) {
  test::TempDir dir;
  const std::string victim = dir.file("victim.txt"), out = dir.file("out.bin");
  write_text(victim, "precious");
  fs::create_symlink("victim.txt", out);
  write_atomic(out, "new contents");
  EXPECT_EQ(read_text(victim), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out)));
  EXPECT_EQ(read_text(out), "new contents");
}

TEST(AtomicFile, TheTemporaryIsFreshAndGoneAfterCommitOrAbandon) {
  test::TempDir dir;
  const std::string out = dir.file("out.bin");
  write_text(out, "old");
  std::string tmp;
  {
    io::AtomicFile f(out);
    tmp = f.temp_path();
    EXPECT_EQ(tmp.rfind(out + ".tmp." + std::to_string(::getpid()) + ".", 0), 0u) << tmp;
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(tmp)));
    f.write(std::as_bytes(std::span("abc", 3)));
  }  // abandoned: no commit
  EXPECT_EQ(read_text(out), "old");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.bin"});
  io::AtomicFile a(out), b(out);  // two writers at once get different names
  EXPECT_NE(a.temp_path(), b.temp_path());
}

TEST(AtomicFile, AKilledWriterLeavesTheOldFileAndTheNextWriteRemovesItsTemporary) {
  test::TempDir dir;
  const std::string out = dir.file("out.bin"), other = dir.file("other.bin");
  write_atomic(out, "old");
  in_killed_child([&] {
    io::AtomicFile f(out);
    const std::string big(1 << 20, 'x');
    f.write(std::as_bytes(std::span(big.data(), big.size())));
    ::raise(SIGKILL);  // mid-write: no destructor, no commit
  });
  EXPECT_EQ(read_text(out), "old");
  ASSERT_EQ(entries(dir.path()).size(), 2u);  // out.bin and the orphan
  // Orphans of dead processes, in the old and the new naming; a live writer's temporary
  // (this process), another output's orphan and unrelated names stay.
  const std::string dead = std::to_string(dead_pid());
  write_text(out + ".tmp." + dead, "orphan");
  write_text(out + ".tmp." + dead + ".0123456789ab", "orphan");
  write_text(dir.file("victim.txt"), "precious");
  fs::create_symlink("victim.txt", out + ".tmp." + dead + ".link");  // removed: the link only
  write_text(out + ".tmp." + std::to_string(::getpid()) + ".live", "live");
  write_text(other + ".tmp." + dead, "another output's");
  write_text(out + ".tmp.notapid", "unrelated");
  write_atomic(out, "new");
  EXPECT_EQ(read_text(out), "new");
  EXPECT_EQ(read_text(dir.file("victim.txt")), "precious");
  const std::vector<std::string> expected = {"other.bin.tmp." + dead, "out.bin",
                                             "out.bin.tmp." + std::to_string(::getpid()) + ".live",
                                             "out.bin.tmp.notapid", "victim.txt"};
  EXPECT_EQ(entries(dir.path()), expected);
  EXPECT_EQ(io::remove_stale_temporaries(other), 1);
}

TEST(AtomicFile, ProbeFindsUnwritableOutputsAndCreatesNothing) {
  test::TempDir dir;
  io::probe_output(dir.file("fine.bin"), 1000);
  EXPECT_TRUE(entries(dir.path()).empty());
  fs::create_directory(dir.file("sub"));
  expect_error([&] { io::probe_output(dir.file("sub")); }, {"sub", "is a directory"});
  expect_error([&] { io::probe_output(dir.file("sub") + "/"); }, {"is a directory"});
  expect_error([&] { io::probe_output(dir.file("missing/x.bin")); },
               {"missing/x.bin", "cannot write"});
  write_text(dir.file("plain"), "x");
  expect_error([&] { io::probe_output(dir.file("plain/x.bin")); }, {"plain/x.bin"});
  expect_error([&] { io::probe_output("/proc/tinylm-probe.bin"); }, {"cannot write"});
  expect_error([&] { io::probe_output(dir.file("huge.bin"), uint64_t{1} << 62); },
               {"huge.bin", "MB free"});
  expect_error([&] { io::probe_output(""); }, {"empty"});
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"plain", "sub"}));
  EXPECT_TRUE(fs::is_empty(dir.file("sub")));
}

const std::vector<std::string> kModelFiles = {"config.json", "weights.bin"};

void write_model(io::StagedDir& out, const std::string& tag) {
  write_atomic(out.file("config.json"), "config " + tag);
  write_atomic(out.file("weights.bin"), "weights " + tag);
}

// Issue 35, finding 2: the rename put a regular file where a device was (as root, `convert
// MODEL /dev/full` replaced /dev/full). A character device is written in place.
TEST(AtomicFile, ACharacterDeviceIsWrittenInPlaceNotReplaced) {
  TINYLM_SKIP_UNLESS_ROOT();
  test::TempDir dir;
  const std::string null = dir.file("null"), full = dir.file("full");
  test::make_memory_device(null, test::kNullMinor);
  test::make_memory_device(full, test::kFullMinor);
  EXPECT_EQ(io::output_mode(null), io::OutputMode::stream);
  io::probe_output(null, uint64_t{1} << 62);  // nothing is stored: no space needed
  write_atomic(null, std::string(100000, 'x'));
  EXPECT_TRUE(test::is_char_device(null));
  // A write error is still an error, and the device stays.
  expect_error([&] { write_atomic(full, std::string(100000, 'x')); }, {"full", "write failed"});
  EXPECT_TRUE(test::is_char_device(full));
  // A symlink to a device is followed: the device is written, the link stays.
  fs::create_symlink("null", dir.file("link"));
  write_atomic(dir.file("link"), "through the link");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir.file("link"))));
  EXPECT_TRUE(test::is_char_device(null));
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"full", "link", "null"}));
}

TEST(AtomicFile, AFifoIsStreamedToItsReader) {
  test::TempDir dir;
  const std::string fifo = dir.file("pipe");
  test::make_fifo(fifo);
  const std::string text(300000, 'y');  // more than a pipe holds: the writer must stream
  test::FifoReader reader(fifo);
  write_atomic(fifo, text);
  EXPECT_EQ(reader.finish(), text);
  EXPECT_TRUE(test::is_fifo(fifo));
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"pipe"});
}

// /dev/stdout, /dev/fd/N and /proc/self/fd/N name a descriptor of this process: the writer
// writes through it (here a pipe's), and never renames anything in /dev or /proc.
TEST(AtomicFile, ALinkToAnOwnDescriptorWritesThroughIt) {
  EXPECT_EQ(io::output_mode("/dev/stdout"), io::OutputMode::stream);
  EXPECT_EQ(io::output_mode("/dev/fd/2"), io::OutputMode::stream);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[1]);
  io::probe_output(path);
  write_atomic(path, "through the descriptor");
  ::close(fds[1]);
  char buf[64] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf - 1), 22);
  ::close(fds[0]);
  EXPECT_STREQ(buf, "through the descriptor");
}

TEST(AtomicFile, DirectoriesBlockDevicesAndSocketsAreRefusedBeforeAnyWrite) {
  test::TempDir dir;
  fs::create_directory(dir.file("sub"));
  test::make_socket(dir.file("sock"));
  std::vector<std::pair<std::string, std::string>> refused = {{"sub", "is a directory"},
                                                              {"sock", "is a socket"}};
  if (::geteuid() == 0) {
    test::make_block_device(dir.file("block"));
    refused.push_back({"block", "is a block device"});
  }
  const std::vector<std::string> before = entries(dir.path());
  for (const auto& [name, phrase] : refused) {
    const std::string path = dir.file(name);
    expect_error([&] { io::probe_output(path); }, {name, phrase});
    expect_error([&] { io::AtomicFile f(path); }, {name, phrase});
    expect_error([&] { write_atomic(path, "x"); }, {name, phrase});
  }
  EXPECT_EQ(entries(dir.path()), before);
  EXPECT_TRUE(fs::is_directory(dir.file("sub")));
  EXPECT_TRUE(fs::is_socket(dir.file("sock")));
}

TEST(StagedDir, ADirectoryAppearsWholeOrNotAtAll) {
  test::TempDir dir;
  const std::string model = dir.file("model");
  {
    io::StagedDir out(model, kModelFiles);
    write_model(out, "1");
    EXPECT_FALSE(fs::exists(model));  // nothing at the target until commit
    out.commit();
  }
  EXPECT_EQ(read_text(model + "/config.json"), "config 1");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"model"});
  {  // not committed (an error on the way): the old directory stands, the staging is gone
    io::StagedDir out(model, kModelFiles);
    write_atomic(out.file("config.json"), "config 2");
  }
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"model"});
  EXPECT_EQ(read_text(model + "/config.json"), "config 1");
  {  // a directory of this output's own files is replaced as a whole
    io::StagedDir out(model + "/", kModelFiles);
    write_atomic(out.file("config.json"), "config 3");
    out.commit();
  }
  EXPECT_EQ(entries(model), std::vector<std::string>{"config.json"});
  EXPECT_EQ(read_text(model + "/config.json"), "config 3");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"model"});
}

TEST(StagedDir, RefusesToReplaceWhatItDidNotWrite) {
  test::TempDir dir;
  const std::string model = dir.file("model");
  fs::create_directory(model);
  write_text(model + "/notes.txt", "mine");
  expect_error([&] { io::StagedDir out(model, kModelFiles); }, {"model", "notes.txt"});
  expect_error([&] { io::check_staged_target(model, kModelFiles); }, {"notes.txt"});
  EXPECT_EQ(read_text(model + "/notes.txt"), "mine");
  write_text(dir.file("file"), "a file");
  expect_error([&] { io::check_staged_target(dir.file("file"), kModelFiles); },
               {"not a directory"});
  fs::create_symlink("model", dir.file("link"));
  expect_error([&] { io::check_staged_target(dir.file("link"), kModelFiles); }, {"symlink"});
  expect_error([&] { io::check_staged_target(dir.file("no/such/model"), kModelFiles); },
               {"cannot write"});
  expect_error([&] { io::check_staged_target(dir.file("big"), kModelFiles, uint64_t{1} << 62); },
               {"MB free"});
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"file", "link", "model"}));
  // Found between the check and the commit: still refused, and the target left alone.
  io::StagedDir late(dir.file("late"), kModelFiles);
  write_model(late, "x");
  fs::create_directory(dir.file("late"));
  write_text(dir.file("late/keep.txt"), "keep");
  expect_error([&] { late.commit(); }, {"keep.txt"});
  EXPECT_EQ(entries(dir.file("late")), std::vector<std::string>{"keep.txt"});
}

TEST(StagedDir, AKilledWriterLeavesTheOldDirectoryAndTheNextCommitCleansUp) {
  test::TempDir dir;
  const std::string model = dir.file("model");
  {
    io::StagedDir out(model, kModelFiles);
    write_model(out, "old");
    out.commit();
  }
  in_killed_child([&] {
    io::StagedDir out(model, kModelFiles);
    write_atomic(out.file("config.json"), "config new");
    ::raise(SIGKILL);  // before the weights
  });
  EXPECT_EQ(read_text(model + "/config.json"), "config old");
  EXPECT_EQ(read_text(model + "/weights.bin"), "weights old");
  EXPECT_EQ(entries(dir.path()).size(), 2u);  // the model and the orphaned staging directory
  {
    io::StagedDir out(model, kModelFiles);
    write_model(out, "new");
    out.commit();
  }
  EXPECT_EQ(read_text(model + "/weights.bin"), "weights new");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"model"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
