// `tinylm train-gpt2` end to end on the tiny PyTorch fixture model: the printed protocol, the
// metrics JSON against PyTorch's losses and fingerprints (tools/gen_gpt2_train_fixtures.py),
// dropout and dtype options, saved weights, and the errors for bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::run_cli;

const std::string kModel = "tests/fixtures/gpt2/tiny/model.safetensors";
const std::string kTokens = "tests/fixtures/gpt2/train/tokens.json";

nlohmann::json expected() {
  return nlohmann::json::parse(
      test::read_text(test::source_path("tests/fixtures/gpt2/train/expected.json")));
}

double num(const nlohmann::json& v) { return std::stod(v.get<std::string>()); }

std::string train_args(const std::string& extra) {
  return "train-gpt2 --threads 1 --model " + test::source_path(kModel) + " --tokens " +
         test::source_path(kTokens) + " " + extra;
}

// The protocol's printed lines and metrics JSON against PyTorch's numbers, on `devices`
// replicas (each on its shard of the batch), on the CPU or on GPU 0 (`gpu`: its name).
void expect_protocol(int devices, const std::string& gpu) {
  test::TempDir dir;
  const test::CommandResult r =
      run_cli(train_args("--steps 5 --devices " + std::to_string(devices) + " --metrics-out " +
                         dir.file("m.json") + (gpu.empty() ? "" : " --device gpu")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json want = expected();
  const auto& losses = want["sgd"]["losses"]["0.0001"];
  // The printed lines: the initial loss, then `step %3d  loss %s` (the times go to stderr).
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  ASSERT_EQ(line.rfind("initial loss (before step 1): ", 0), 0u) << line;
  EXPECT_NEAR(std::stod(line.substr(30)), num(losses[0]), 1e-5);
  const std::regex step_line(R"(step +(\d+)  loss (\S+))");
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, step_line)) << line;
    EXPECT_EQ(std::stoi(m[1]), i);
    EXPECT_NEAR(std::stod(m[2]), num(losses[i - 1]), 1e-5 * num(losses[i - 1])) << line;
  }
  EXPECT_NE(r.err.find("5 steps in "), std::string::npos) << r.err;
  // The metrics JSON: schema and values.
  const auto j = nlohmann::json::parse(test::read_text(dir.file("m.json")));
  EXPECT_EQ(j["device"], gpu.empty() ? "CPU" : "GPU");
  if (!gpu.empty()) {
    EXPECT_EQ(j["gpu"], gpu);
  }
  EXPECT_EQ(j["devices"], devices);
  EXPECT_EQ(j["steps"], 5);
  EXPECT_EQ(j["batch_size"], 4);
  EXPECT_EQ(j["seq_len"], 64);
  EXPECT_EQ(j["lr"].get<double>(), 1e-4);
  EXPECT_EQ(j["n_params"], 28);  // tensors: wte, wpe, 12 per layer (2 layers), ln_f weight and bias
  EXPECT_TRUE(j["jit_calls"].is_null());
  ASSERT_EQ(j["records"].size(), 5u);
  const auto& prints = want["fingerprints"]["after_step"];
  for (size_t i = 0; i < 5; ++i) {
    const auto& rec = j["records"][i];
    EXPECT_EQ(rec["step"], static_cast<int>(i + 1));
    EXPECT_NEAR(std::stod(rec["loss"].get<std::string>()), num(losses[i]), 1e-5 * num(losses[i]));
    EXPECT_TRUE(rec["ms"].is_number());
    ASSERT_EQ(rec["weights"].size(), prints[i].size());
    for (const auto& [name, fp] : prints[i].items()) {
      const auto& got = rec["weights"][name];
      ASSERT_TRUE(got.is_object()) << name;
      const double abs_sum = num(fp["abs_sum"]);
      EXPECT_NEAR(num(got["sum"]), num(fp["sum"]), 1e-5 * abs_sum) << name << " step " << i + 1;
      EXPECT_NEAR(num(got["abs_sum"]), abs_sum, 1e-5 * abs_sum) << name << " step " << i + 1;
      ASSERT_EQ(got["first8"].size(), 8u);
      for (size_t k = 0; k < 8; ++k) {
        EXPECT_NEAR(num(got["first8"][k]), num(fp["first8"][k]), 1e-6) << name << "[" << k << "]";
      }
    }
  }
}

// On 1, 2 and 4 devices: the same PyTorch numbers within the same tolerances, and the shard
// count in the metrics.
class CliTrainGpt2Devices : public ::testing::TestWithParam<int> {};

TEST_P(CliTrainGpt2Devices, ProtocolMatchesPyTorch) { expect_protocol(GetParam(), ""); }

INSTANTIATE_TEST_SUITE_P(CliTrainGpt2, CliTrainGpt2Devices, ::testing::Values(1, 2, 4));

// On the GPU (issue 37): the forward and backward there, the same PyTorch tolerances as the CPU
// (1e-5 relative for losses and fingerprints), the device named in the metrics.
TEST(CliTrainGpt2Gpu, ProtocolMatchesPyTorchOnTheGpu) {
  const kernels::vulkan::DeviceList gpus = kernels::vulkan::list_devices();
  if (gpus.devices.empty()) GTEST_SKIP() << "no GPU tests: " << gpus.why_none;
  for (const int devices : {1, 2}) {
    SCOPED_TRACE("devices " + std::to_string(devices));
    expect_protocol(devices, gpus.devices[0].name);
  }
}

TEST(CliTrainGpt2, DropoutZeroIsNoDropoutAndSeedsReproduce) {
  const auto losses = [](const std::string& out) {  // the first step's loss as printed
    std::smatch m;
    return std::regex_search(out, m, std::regex(R"(step +1  loss (\S+))")) ? m[1].str() : "none";
  };
  const test::CommandResult plain = run_cli(train_args("--steps 1"));
  const test::CommandResult zero = run_cli(train_args("--steps 1 --dropout 0"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(losses(plain.out), losses(zero.out));
  const test::CommandResult a = run_cli(train_args("--steps 1 --dropout 0.1 --seed 7"));
  const test::CommandResult b = run_cli(train_args("--steps 1 --dropout 0.1 --seed 7"));
  const test::CommandResult c = run_cli(train_args("--steps 1 --dropout 0.1 --seed 8"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(losses(a.out), losses(b.out));
  EXPECT_NE(losses(a.out), losses(c.out));
  EXPECT_NE(losses(a.out), losses(plain.out));
}

TEST(CliTrainGpt2, HalfComputeTracksF32AndF16ShowsTheScale) {
  const test::CommandResult bf16 = run_cli(train_args("--steps 2 --compute-dtype bf16"));
  const test::CommandResult f16 = run_cli(train_args("--steps 2 --compute-dtype f16"));
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  const double want = num(expected()["sgd"]["losses"]["0.0001"][1]);
  const std::regex step2(R"(step   2  loss (\S+))");
  std::smatch m;
  const std::string b_out = bf16.out, f_out = f16.out;
  ASSERT_TRUE(std::regex_search(b_out, m, step2)) << b_out;
  EXPECT_NEAR(std::stod(m[1]), want, 0.02 * want);  // bf16: 8 bits of mantissa
  ASSERT_TRUE(std::regex_search(f_out, m, step2)) << f_out;
  EXPECT_NEAR(std::stod(m[1]), want, 0.005 * want);  // f16: 11 bits
  EXPECT_NE(f_out.find("scale 65536"), std::string::npos) << f_out;
}

TEST(CliTrainGpt2, SavedWeightsReloadAsTheTrainedModel) {
  test::TempDir dir;
  std::filesystem::copy_file(test::source_path("tests/fixtures/gpt2/tiny/config.json"),
                             dir.file("config.json"));
  const std::string out = dir.file("trained.safetensors");
  const test::CommandResult r = run_cli(train_args("--steps 2 --lr 0.5 --save-weights " + out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Training on from the saved weights continues the trajectory: its initial loss is the
  // loss PyTorch records before update 3.
  const test::CommandResult next = run_cli("train-gpt2 --threads 1 --model " + out + " --tokens " +
                                           test::source_path(kTokens) + " --steps 0");
  ASSERT_EQ(next.exit_code, 0) << next.err;
  const double want = num(expected()["sgd"]["losses"]["0.5"][2]);
  EXPECT_NEAR(std::stod(next.out.substr(next.out.find(": ") + 2)), want, 1e-4 * want) << next.out;
  const checkpoints::Gpt2Checkpoint saved = checkpoints::load_gpt2(out);
  const checkpoints::Gpt2Checkpoint orig = checkpoints::load_gpt2(test::source_path(kModel));
  EXPECT_NE(saved.params, orig.params);
}

// A diverging run: f32 (and bf16) stop with an error at the first non-finite step, before
// printing it; f16 skips such steps and halves the loss scale, as long as they come.
TEST(CliTrainGpt2, DivergenceStopsF32AndIsSkippedInF16) {
  const test::CommandResult f32 = run_cli(train_args("--steps 3 --lr 1e6"));
  EXPECT_NE(f32.exit_code, 0);
  EXPECT_EQ(std::count(f32.err.begin(), f32.err.end(), '\n'), 1) << f32.err;
  EXPECT_NE(f32.err.find("not finite at step 3"), std::string::npos) << f32.err;
  EXPECT_NE(f32.out.find("step   2  loss"), std::string::npos) << f32.out;
  EXPECT_EQ(f32.out.find("step   3"), std::string::npos) << f32.out;
  const test::CommandResult f16 = run_cli(train_args("--steps 3 --lr 1e6 --compute-dtype f16"));
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  const std::regex skipped(
      R"(step   3  loss nan .* scale 32768  \(skipped: gradients overflowed\))");
  EXPECT_TRUE(std::regex_search(f16.out, skipped)) << f16.out;
}

TEST(CliTrainGpt2, BadInputsAreOneLineErrors) {
  test::TempDir dir;
  const auto expect_error = [](const test::CommandResult& r, const std::string& fragment) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  };
  std::string grid = "{\"ids\": [";
  for (int row = 0; row < 4; ++row) {
    grid += row ? ",[" : "[";
    for (int c = 0; c < 64; ++c) grid += (c ? ",1" : "1");
    grid += "]";
  }
  test::write_text(dir.file("short.json"), grid + "]}");
  const std::string base = "train-gpt2 --model " + test::source_path(kModel);
  expect_error(run_cli(base + " --tokens " + dir.file("short.json")), "short.json");
  test::write_text(dir.file("big.json"),
                   std::regex_replace(test::read_text(test::source_path(kTokens)),
                                      std::regex("\\[(\\d+)"), "[99999"));
  expect_error(run_cli(base + " --tokens " + dir.file("big.json")), "outside the vocabulary");
  expect_error(run_cli(base + " --tokens " + test::source_path(kTokens) + " --dropout 1"),
               "--dropout");
  expect_error(run_cli(base + " --tokens " + test::source_path(kTokens) + " --compute-dtype f64"),
               "--compute-dtype");
  expect_error(run_cli(base + " --tokens " + dir.file("missing.json")), "missing.json");
  expect_error(run_cli(base + " --tokens " + test::source_path(kTokens) + " --devices 3"),
               "--devices 3");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
