// `tinylm train` on bad input: one-line errors that name the file or flag, and nothing of an
// existing run overwritten.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/train/run_dir.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

void expect_one_line_error(const CommandResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

// Every file of a run directory and its bytes, to check that nothing changed. The lock file
// is left out: it holds the pid of the last process that took the run, not the run's data.
std::vector<std::pair<std::string, std::string>> snapshot(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != ".lock")
      out.emplace_back(e.path().string(), read_text(e.path().string()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::string kMicrogpt = " --steps 4 --save-every 2 --eval-batches 5 --data ";

TEST(CliTrain, BadDataIsOneLineErrorNamingTheFile) {
  TempDir tmp;
  write_text(tmp.file("empty.txt"), "");
  expect_one_line_error(
      run_cli("train --arch evermind --data " + tmp.file("empty.txt") + " --out " + tmp.file("a")),
      "empty.txt: empty");
  write_text(tmp.file("latin1.txt"), "caf\xe9 au lait\n");
  expect_one_line_error(run_cli("train --arch gpt2 --preset small-test --seq-len 32 --data " +
                                tmp.file("latin1.txt") + " --out " + tmp.file("b")),
                        "latin1.txt: invalid UTF-8 at byte 3");
  write_text(tmp.file("short.txt"), "a few words only\n");
  expect_one_line_error(run_cli("train --arch gpt2 --preset small-test --seq-len 64 --data " +
                                tmp.file("short.txt") + " --out " + tmp.file("c")),
                        "fewer than one window");
  expect_one_line_error(run_cli("train --arch microgpt --data " + tmp.file("nothing-here") +
                                " --out " + tmp.file("d")),
                        "nothing-here");
  expect_one_line_error(run_cli("train --arch microgpt --out " + tmp.file("e")), "--data");
}

TEST(CliTrain, ResumeChecksTheRunAndOverwritesNothing) {
  TempDir tmp;
  const std::string names = source_path("data/names.txt");
  const std::string run = tmp.file("run");
  const CommandResult ok = run_cli("train --arch microgpt" + kMicrogpt + names + " --out " + run);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto before = snapshot(run);

  expect_one_line_error(run_cli("train --resume " + tmp.file("nowhere")), "not a training run");
  expect_one_line_error(run_cli("train --arch microgpt" + kMicrogpt + names + " --out " + run),
                        "already holds a training run");
  expect_one_line_error(run_cli("train --resume " + run + " --arch gpt2"), "--arch");
  expect_one_line_error(run_cli("train --resume " + run + " --lr 0.5"), "--lr");
  expect_one_line_error(run_cli("train --resume " + run + " --out " + tmp.file("x")), "--out");
  // A finished run trains nothing: exit 1 and how to go on (which run2 below does).
  const CommandResult finished = run_cli("train --resume " + run);
  EXPECT_EQ(finished.exit_code, 1);
  expect_one_line_error(finished, run + ": finished at step 4 of 4; to train further: tinylm " +
                                      "train --resume " + run + " --steps M (M > 4)");
  EXPECT_EQ(finished.out, "");
  const CommandResult fewer = run_cli("train --resume " + run + " --steps 3");
  EXPECT_EQ(fewer.exit_code, 1);
  expect_one_line_error(fewer, "--steps 3 trains no further; give --steps above 4");
  EXPECT_EQ(snapshot(run), before);

  // A damaged training state: an error naming it, and the run left as it was.
  const std::string state = run + "/step-00000004/train_state.bin";
  std::string bytes = read_text(state);
  bytes[bytes.size() / 2] ^= 0x10;
  write_text(state, bytes);
  const auto damaged = snapshot(run);
  expect_one_line_error(run_cli("train --resume " + run + " --steps 6"),
                        "train_state.bin: checksum mismatch");
  EXPECT_EQ(snapshot(run), damaged);
  fs::remove(state);
  expect_one_line_error(run_cli("train --resume " + run + " --steps 6"), "train_state.bin");

  // A cadence flag may change: more steps continue the run.
  const std::string run2 = tmp.file("run2");
  ASSERT_EQ(run_cli("train --arch microgpt" + kMicrogpt + names + " --out " + run2).exit_code, 0);
  const CommandResult more = run_cli("train --resume " + run2 + " --steps 6");
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_TRUE(fs::exists(run2 + "/step-00000006/model.safetensors"));
}

void expect_usage_error(const CommandResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  expect_one_line_error(r, fragment);
}

// Every flag is checked before the run directory, a tokenizer or tokens.bin is written: a
// wrong value is a usage error (exit 2) naming the flag, and --out is not even created.
TEST(CliTrain, EveryFlagIsCheckedBeforeAnythingIsWritten) {
  TempDir tmp;
  const std::string data = tmp.file("text.txt");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 20000));
  const std::string gpt2 = "train --arch gpt2 --preset small-test --seq-len 32 --data " + data;
  const std::string evermind = "train --arch evermind --vocab-size 300 --data " + data;
  const std::string microgpt = "train --arch microgpt --data " + source_path("data/names.txt");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {gpt2 + " --beta1 1.5", "--beta1"},
      {gpt2 + " --beta2 1", "--beta2"},
      {gpt2 + " --eps 0", "--eps"},
      {gpt2 + " --weight-decay -1", "--weight-decay"},
      {gpt2 + " --lr 1e-3 --min-lr 1e-2", "--min-lr"},
      {gpt2 + " --warmup -1", "--warmup"},
      {gpt2 + " --clip -1", "--clip"},
      {gpt2 + " --clip nan", "--clip"},
      {gpt2 + " --max-bad-steps -1", "--max-bad-steps"},
      {gpt2 + " --schedule cosine-ish", "--schedule: "},
      {gpt2 + " --optimizer adam", "--optimizer: "},
      {gpt2 + " --decay none", "--decay: "},
      {gpt2 + " --order shuffled", "--order: "},
      {gpt2 + " --compute-dtype f64", "--compute-dtype"},
      {gpt2 + " --seed 18446744073709551616", "--seed"},
      {gpt2 + " --seed -1", "--seed"},
      {gpt2 + " --steps 9223372036854775808", "--steps"},
      {gpt2 + " --keep 0", "--keep"},
      {gpt2 + " --device tpu", "--device tpu: cpu, gpu or gpu:N"},
      {gpt2 + " --device gpu:99", "--device gpu"},
      {evermind + " --device gpu", "--device applies to --arch gpt2 only"},
      {evermind + " --beta1 -0.5", "--beta1"},
      {evermind + " --aux-loss-coef -1", "--aux-loss-coef"},
      {microgpt + " --n-embd 10 --n-head 4", "--n-embd"},
      {microgpt + " --n-layer 0", "--n-layer"},
      // The preset's 128 positions against a longer --seq-len: what to change.
      {"train --arch gpt2 --preset small-test --seq-len 256 --data " + data,
       "--seq-len 256 is longer than the model's 128 positions"},
  };
  for (const auto& [command, fragment] : cases) {
    SCOPED_TRACE(command);
    const std::string run = tmp.file("run");
    expect_usage_error(run_cli(command + " --out " + run), fragment);
    EXPECT_FALSE(fs::exists(run)) << "the run directory was written";
  }
}

// Training a GPU cannot hold (GPT-2 124M on 64 rows of 1024: tens of GB) is refused in one
// line before the run directory is made; without a GPU, --device gpu is refused as well.
TEST(CliTrain, TrainingTooLargeForTheGpuIsRefusedBeforeAnythingIsWritten) {
  TempDir tmp;
  const std::string data = tmp.file("text.txt");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 20000));
  const std::string run = tmp.file("run");
  const CommandResult r = run_cli(
      "train --arch gpt2 --preset 124M --batch 64 --seq-len 1024 "
      "--device gpu --data " +
      data + " --out " + run);
  const bool gpu = !kernels::vulkan::list_devices().devices.empty();
  expect_one_line_error(r, gpu ? " of device memory, '" : "--device gpu");
  EXPECT_FALSE(fs::exists(run)) << "the run directory was written";
}

// A run that stopped before its first checkpoint may be started over with --out, but then too
// every flag is checked before its run.json, metrics.jsonl or tokens.bin are touched.
TEST(CliTrain, BadFlagsLeaveARunWithoutCheckpointsAsItWas) {
  TempDir tmp;
  const std::string data = tmp.file("text.txt"), run = tmp.file("run");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 20000));
  const std::string gpt2 = "train --arch gpt2 --preset small-test --seq-len 32 --batch 2 " +
                           std::string("--eval-batches 1 --threads 1 --data ") + data;
  ASSERT_EQ(run_cli(gpt2 + " --steps 2 --out " + run).exit_code, 0);
  for (const train::Checkpoint& c : train::RunDir(run).checkpoints()) fs::remove_all(c.path);
  fs::remove(run + "/latest");
  const auto before = snapshot(run);
  expect_usage_error(run_cli(gpt2 + " --steps 2 --eps -1 --out " + run), "--eps");
  EXPECT_EQ(snapshot(run), before);
}

TEST(CliTrain, RunDirectoryFromAnotherArchIsRejected) {
  TempDir tmp;
  const std::string run = tmp.file("run");
  ASSERT_EQ(
      run_cli("train --arch microgpt" + kMicrogpt + source_path("data/names.txt") + " --out " + run)
          .exit_code,
      0);
  // Its training state says microgpt: resuming it as another family is refused.
  std::string config = read_text(run + "/run.json");
  config.replace(config.find("\"microgpt\""), 10, "\"evermind\"");
  write_text(run + "/run.json", config);
  const auto before = snapshot(run);
  const CommandResult r = run_cli("train --resume " + run);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(snapshot(run), before);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
