// What a training run checks before it trusts its files or starts its work: the CRCs of a
// checkpoint's files (recorded in its train_state.bin), the state's step against its
// directory's, a rebuilt tokens.bin said out loud, and the disk space the checkpoints need.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/families/family.h"
#include "tinylm/models/gpt2/config.h"
#include "tinylm/train/disk_space.h"
#include "tinylm/train/family.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/train_state.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

const std::string kMicrogpt = "train --arch microgpt --steps 4 --save-every 2 --eval-batches 5 ";

std::string microgpt_run(const TempDir& tmp) {
  const std::string run = tmp.file("run");
  const CommandResult r =
      run_cli(kMicrogpt + "--data " + source_path("data/names.txt") + " --out " + run);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return run;
}

void expect_refused(const CommandResult& r, const std::vector<std::string>& phrases) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const std::string& p : phrases) EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
}

TEST(TrainRunChecks, AFlippedBitInACheckpointsWeightsIsRefusedOnResume) {
  TempDir tmp;
  const std::string run = microgpt_run(tmp);
  const std::string model = run + "/step-00000004/model.safetensors";
  const std::string good = read_text(model);
  for (const size_t at : {good.size() / 2, good.size() - 1}) {
    std::string bad = good;
    bad[at] ^= 0x01;
    write_text(model, bad);
    expect_refused(run_cli("train --resume " + run + " --steps 6"), {model, "checksum mismatch"});
  }
  write_text(model, good);
  const CommandResult ok = run_cli("train --resume " + run + " --steps 6");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(TrainRunChecks, AStateFromAnotherStepIsRefused) {
  TempDir tmp;
  const std::string run = microgpt_run(tmp);
  const std::string state = run + "/step-00000004/train_state.bin";
  fs::copy_file(run + "/step-00000002/train_state.bin", state,
                fs::copy_options::overwrite_existing);
  expect_refused(run_cli("train --resume " + run + " --steps 6"),
                 {state, "state of step 2", "checkpoint of step 4"});
}

TEST(TrainRunChecks, AStateWithoutChecksumsResumesWithANote) {
  TempDir tmp;
  const std::string run = microgpt_run(tmp);
  // As an older tinylm wrote it: the same state, no "files".
  const std::string path = run + "/step-00000004/train_state.bin";
  train::TrainState<double> s = train::load_train_state<double>(path);
  ASSERT_TRUE(s.files.has_value());
  EXPECT_EQ(s.files->count("model.safetensors"), 1u);
  s.files.reset();
  train::save_train_state(path, s);
  const CommandResult r = run_cli("train --resume " + run + " --steps 6");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(path + " records no checksums of its files"), std::string::npos) << r.err;
}

TEST(TrainRunChecks, ARebuiltTokenFileIsReported) {
  TempDir tmp;
  const std::string data = tmp.file("text.txt"), run = tmp.file("run");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 20000));
  const std::string flags = " --arch gpt2 --preset small-test --seq-len 32 --batch 2 --steps 2 " +
                            std::string("--eval-batches 1 --threads 1 --data ") + data;
  ASSERT_EQ(run_cli("train" + flags + " --out " + run).exit_code, 0);
  std::string tokens = read_text(run + "/tokens.bin");
  tokens[tokens.size() - 1] ^= 0x01;
  write_text(run + "/tokens.bin", tokens);
  const CommandResult r = run_cli("train --resume " + run + " --steps 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(run + "/tokens.bin: rebuilt from the data (the old one: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("token data CRC mismatch"), std::string::npos) << r.err;
}

TEST(TrainRunChecks, DiskNeedIsCheckpointsTimesKeepPlusOneAndTokens) {
  TempDir tmp;
  write_text(tmp.file("a.txt"), std::string(1000, 'x'));
  const train::TrainFamily& gpt2 = families::trainable().find("gpt2");
  train::RunConfig c = train::defaults_for(families::trainable(), "gpt2");
  c.preset = "small-test";
  gpt2.complete(c, nlohmann::ordered_json::object(), false);  // its shape
  c.keep = 3;
  c.data = {tmp.file("a.txt")};
  const train::DiskNeed need = train::estimate_disk_need(gpt2, c, {});
  const gpt2::Config g = gpt2::preset("small-test");
  EXPECT_EQ(need.checkpoints, 4);
  EXPECT_GE(need.model_bytes, checkpoints::gpt2_saved_bytes(g));
  EXPECT_EQ(need.moment_bytes, 8 * gpt2::param_layout(g).size());
  EXPECT_EQ(need.tokens_bytes, 4000u);
  EXPECT_EQ(need.total(), 4 * (need.model_bytes + need.moment_bytes) + 4000);
  train::check_disk_space(tmp.path().string(), need, need.total());
  expect_error([&] { train::check_disk_space("RUN", need, need.total() - 1); },
               {"RUN: ", "MB free", "the run needs about", "--keep"});
  c.optimizer = "sgd";
  EXPECT_EQ(train::estimate_disk_need(gpt2, c, {}).moment_bytes, 0u);
}

// A small filesystem of its own (CI runs as root); skipped where mounting is not allowed.
class SmallDisk {
 public:
  explicit SmallDisk(const std::string& at) : at_(at) {
    fs::create_directories(at);
    mounted_ = ::mount("tmpfs", at.c_str(), "tmpfs", 0, "size=8m") == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string at_;
  bool mounted_ = false;
};

TEST(TrainRunChecks, AFullDiskIsFoundBeforeAnyWork) {
  TempDir tmp;
  const SmallDisk disk(tmp.file("small"));
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << tmp.path();
  const std::string data = tmp.file("text.txt"), run = tmp.file("small/run");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 20000));
  // small-test: about 40 MB per checkpoint (weights and moments), on 8 MB of disk.
  const CommandResult r = run_cli("train --arch gpt2 --preset small-test --seq-len 32 --data " +
                                  data + " --out " + run);
  expect_refused(r, {run + ": ", "MB free on its filesystem", "checkpoint(s)"});
  EXPECT_FALSE(fs::exists(run)) << "the run directory was written";
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
