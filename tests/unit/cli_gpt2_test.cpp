// The GPT-2 subcommands end to end: init -> generate / perplexity / tokenize, and their errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/kernels/matmul/bf16_dot.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

using test::run_cli;

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(CliGpt2, TokenizeKnownGpt2Ids) {
  const std::string vocab = " --tokenizer " + test::source_path("data/gpt2");
  const test::CommandResult r = run_cli("tokenize" + vocab + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "15496 995\n");
  const test::CommandResult d = run_cli("tokenize" + vocab + " --decode '15496, 995'");
  EXPECT_EQ(d.out, "Hello world\n");
  EXPECT_EQ(run_cli("tokenize" + vocab + " --allow-special '<|endoftext|>'").out, "50256\n");
  EXPECT_EQ(run_cli("tokenize" + vocab + " '<|endoftext|>'").out, "27 91 437 1659 5239 91 29\n");
  const test::CommandResult bad = run_cli("tokenize" + vocab + " --decode '12 nope'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(lines(bad.err), 1);
}

TEST(CliGpt2, InitThenGenerateAndPerplexity) {
  test::TempDir dir;
  const std::string model = dir.file("m");
  const test::CommandResult init =
      run_cli("init --arch gpt2 --preset small-test --seed 3 --out " + model + " --tokenizer " +
              test::source_path("data/gpt2"));
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const auto weights = io::SafetensorsFile::open(model + "/model.safetensors");
  EXPECT_NE(weights.find("h.0.attn.bias"), nullptr);
  EXPECT_NE(weights.find("wte.weight"), nullptr);

  const test::CommandResult gen =
      run_cli("generate --model " + model + " --prompt 'The quick brown fox' --max-tokens 8");
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(gen.out.rfind("The quick brown fox", 0), 0u);
  EXPECT_NE(gen.err.find("decode"), std::string::npos);
  // Greedy is deterministic, and every dtype runs.
  EXPECT_EQ(
      run_cli("generate --model " + model + " --prompt 'The quick brown fox' --max-tokens 8").out,
      gen.out);
  for (const char* dtype : {"bf16", "f16", "q8_0", "q4_0"}) {
    const test::CommandResult r =
        run_cli("generate --model " + model + " --prompt 'Hi' --max-tokens 4 --dtype " + dtype);
    EXPECT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("of ") + dtype + " weights"), std::string::npos) << r.err;
  }
  const test::CommandResult q8x = run_cli("generate --model " + model +
                                          " --prompt 'Hi' --max-tokens 4 --dtype q4_0 "
                                          "--activations q8_0");
  EXPECT_EQ(q8x.exit_code, 0) << q8x.err;
  EXPECT_NE(q8x.err.find("of q4_0 weights (q8_0 activations)"), std::string::npos) << q8x.err;
  // bf16 activations run where this process's level has AVX512_BF16 (the CLI inherits
  // TINYLM_ISA), and are refused in one line elsewhere.
  const test::CommandResult bfx = run_cli("generate --model " + model +
                                          " --prompt 'Hi' --max-tokens 4 --dtype bf16 "
                                          "--activations bf16");
  if (kernels::bf16_dot_available()) {
    EXPECT_EQ(bfx.exit_code, 0) << bfx.err;
    EXPECT_NE(bfx.err.find("of bf16 weights (bf16 activations)"), std::string::npos) << bfx.err;
  } else {
    EXPECT_NE(bfx.exit_code, 0);
    EXPECT_EQ(lines(bfx.err), 1) << bfx.err;
    EXPECT_NE(bfx.err.find("needs AVX512_BF16"), std::string::npos) << bfx.err;
  }
  test::write_text(dir.file("text.txt"), "It was the best of times, it was the worst of times.");
  const test::CommandResult ppl = run_cli("perplexity --model " + model + " --file " +
                                          dir.file("text.txt") + " --context 8 --stride 4");
  ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
  EXPECT_NE(ppl.out.find("perplexity"), std::string::npos);
  const test::CommandResult ppl_q =
      run_cli("perplexity --model " + model + " --file " + dir.file("text.txt") +
              " --context 8 --stride 4 --dtype q4_0");
  ASSERT_EQ(ppl_q.exit_code, 0) << ppl_q.err;
  EXPECT_NE(ppl_q.out.find("perplexity"), std::string::npos);
}

TEST(CliGpt2, ErrorsAreOneLine) {
  test::TempDir dir;
  for (const std::string& args :
       {std::string("generate --model ") + dir.file("none") + " --prompt hi",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --dtype f8",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --dtype q5_0",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --top-p 0",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --activations q8_0",
        std::string("generate --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --prompt hi --activations bf16",
        std::string("perplexity --model ") + test::source_path("tests/fixtures/gpt2/tiny") +
            " --file " + dir.file("missing.txt"),
        std::string("init --arch gpt2 --preset 7B --out ") + dir.file("x")}) {
    const test::CommandResult r = run_cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
  }
}

// --device gpu on generate and perplexity (issue 37): the CPU's greedy text and the CPU's
// perplexity, f16 and bf16 weights, the GPU named on the load line; what a GPU cannot run is
// refused in one line before the model loads.
TEST(CliGpt2Gpu, GenerateAndPerplexityOnTheGpu) {
  test::TempDir dir;
  const std::string model = dir.file("m");
  ASSERT_EQ(run_cli("init --arch gpt2 --preset small-test --seed 3 --out " + model +
                    " --tokenizer " + test::source_path("data/gpt2"))
                .exit_code,
            0);
  const std::string gen = "generate --model " + model + " --prompt 'The quick brown fox' ";
  const std::string evl = test::source_path("tests/fixtures/evl/tiny_f32.evl");
  for (const auto& [args, says] :
       {std::pair{gen + "--device gpu --dtype q8_0", "a GPU runs f32, f16 or bf16 weights"},
        std::pair{gen + "--device gpu --dtype bf16 --activations bf16", "a GPU computes in f32"},
        std::pair{gen + "--device gpu:x", "--device gpu:x: cpu, gpu or gpu:N"},
        std::pair{"generate --model " + evl + " --prompt hi --device gpu",
                  "EvermindLM generates on the CPU only"}}) {
    const test::CommandResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  const kernels::vulkan::DeviceList gpus = kernels::vulkan::list_devices();
  if (gpus.devices.empty()) {
    const test::CommandResult none = run_cli(gen + "--device gpu");
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_EQ(lines(none.err), 1) << none.err;
    GTEST_SKIP() << "no GPU tests: " << gpus.why_none;
  }
  const test::CommandResult missing =
      run_cli(gen + "--device gpu:" + std::to_string(gpus.devices.size()));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(lines(missing.err), 1) << missing.err;

  // A model the device cannot hold is refused before its weights are read (here: a config of
  // 96 layers 16384 wide over the small model's file).
  std::string config = test::read_text(model + "/config.json");
  for (const auto& [key, value] : {std::pair{"\"n_embd\": 64", "\"n_embd\": 16384"},
                                   std::pair{"\"n_layer\": 2", "\"n_layer\": 96"}}) {
    ASSERT_NE(config.find(key), std::string::npos) << config;
    config.replace(config.find(key), std::string(key).size(), value);
  }
  test::write_text(dir.file("huge.json"), config);
  const test::CommandResult huge = run_cli(gen + "--device gpu --config " + dir.file("huge.json"));
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_EQ(lines(huge.err), 1) << huge.err;
  EXPECT_NE(huge.err.find("of device memory in f32"), std::string::npos) << huge.err;

  // Faults (TINYLM_TEST_GPU_FAULT: what a driver can do, on any device) show at load, before
  // any output: one line, exit 1.
  for (const auto& [fault, says] :
       {std::pair{"shader:matmul_rows", "shader matmul_rows could not be built on"},
        std::pair{"shader:attention_forward", "shader attention_forward could not be built on"},
        std::pair{"lost:3", "the GPU was lost"}}) {
    const test::CommandResult r =
        test::run_shell(std::string("TINYLM_TEST_GPU_FAULT=") + fault + " " + TINYLM_CLI_PATH +
                        " " + gen + "--max-tokens 4 --device gpu");
    EXPECT_EQ(r.exit_code, 1) << fault;
    EXPECT_EQ(r.out, "") << fault;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }

  const test::CommandResult cpu = run_cli(gen + "--max-tokens 8");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const test::CommandResult gpu = run_cli(gen + "--max-tokens 8 --device gpu");
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  EXPECT_EQ(gpu.out, cpu.out);
  EXPECT_NE(gpu.err.find("of f32 weights on GPU 0 (" + gpus.devices[0].name + ")"),
            std::string::npos)
      << gpu.err;
  for (const char* dtype : {"f16", "bf16"}) {
    const test::CommandResult r =
        run_cli(gen + "--max-tokens 4 --device gpu --dtype " + std::string(dtype));
    EXPECT_EQ(r.exit_code, 0) << dtype << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("of ") + dtype + " weights on GPU 0"), std::string::npos)
        << r.err;
  }
  test::write_text(dir.file("text.txt"), "It was the best of times, it was the worst of times.");
  const auto nll = [&](const std::string& device) {
    const test::CommandResult r =
        run_cli("perplexity --model " + model + " --file " + dir.file("text.txt") +
                " --context 8 --stride 4" + " --device " + device);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("mean NLL ");
    return at == std::string::npos ? -1.0 : std::stod(r.out.substr(at + 9));
  };
  const double on_cpu = nll("cpu");
  EXPECT_GT(on_cpu, 0);
  EXPECT_NEAR(nll("gpu"), on_cpu, 1e-5);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
