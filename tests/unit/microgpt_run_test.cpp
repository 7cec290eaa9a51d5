// The whole microgpt program against transcripts written by tools/microgpt_reference.py
// (an independent pure-Python implementation; its default run ends with the figures the
// issue quotes from microgpt.py: "step 1000 / 1000 | loss 2.6497", kamon, ann, karai, ...).
#include "tinylm/train/microgpt_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/core/error.h"
#include "tinylm/models/microgpt/model.h"
#include "tinylm/tokenizers/char_tokenizer.h"

namespace tinylm::train {
namespace TINYLM_TEST_LOCAL {

using microgpt::Engine;

class MicrogptRun : public ::testing::TestWithParam<Engine> {};

std::string run_to_string(const MicrogptOptions& opt) {
  std::ostringstream out;
  run_microgpt(opt, out);
  return out.str();
}

TEST_P(MicrogptRun, SmallNonDefaultRunMatchesPythonTranscript) {
  MicrogptOptions opt;
  opt.data_path = test::source_path("data/names.txt");
  opt.engine = GetParam();
  opt.steps = 40;
  opt.model.n_embd = 8;
  opt.model.n_head = 2;
  opt.model.n_layer = 2;
  opt.model.block_size = 8;
  opt.lr = 0.02;
  opt.temperature = 0.7;
  opt.samples = 6;
  opt.seed = 7;
  EXPECT_EQ(run_to_string(opt),
            test::read_text(test::source_path("tests/fixtures/microgpt/small_run.txt")));
}

// The default run: 1000 steps and 20 samples, identical to microgpt.py's output; the tensor
// engine's at every kernel level (its kernels are exact everywhere).
TEST_P(MicrogptRun, SlowDefaultRunMatchesPythonTranscript) {
  const auto run = [&] {
    MicrogptOptions opt;
    opt.data_path = test::source_path("data/names.txt");
    opt.engine = GetParam();
    const std::string got = run_to_string(opt);
    EXPECT_EQ(got, test::read_text(test::source_path("tests/fixtures/microgpt/default_run.txt")));
    EXPECT_NE(got.find("step 1000 / 1000 | loss 2.6497\n"), std::string::npos);
    EXPECT_NE(got.find("sample  1: kamon\nsample  2: ann\nsample  3: karai\nsample  4: jaire\n"
                       "sample  5: vialan\n"),
              std::string::npos);
  };
  if (GetParam() == Engine::tensor) {
    test::for_each_isa([&](kernels::Isa) { run(); });
  } else {
    run();
  }
}

TEST_P(MicrogptRun, SavedModelSamplesWhatTheRunSampled) {
  test::TempDir dir;
  MicrogptOptions opt;
  opt.data_path = test::source_path("data/names.txt");
  opt.engine = GetParam();
  opt.steps = 30;
  opt.save_path = dir.file("m.safetensors");
  const std::string trained = run_to_string(opt);
  MicrogptOptions load = opt;
  load.save_path.clear();
  load.load_path = dir.file("m.safetensors");
  load.steps.reset();  // --load alone means sample only
  const std::string loaded = run_to_string(load);
  const auto samples = [](const std::string& s) { return s.substr(s.find("--- inference")); };
  EXPECT_EQ(samples(loaded), samples(trained));
  EXPECT_EQ(loaded.find("step "), std::string::npos);
}

TEST_P(MicrogptRun, SameSeedSameOutputOtherSeedOtherOutput) {
  MicrogptOptions opt;
  opt.data_path = test::source_path("data/names.txt");
  opt.engine = GetParam();
  opt.steps = 20;
  opt.samples = 5;
  const std::string a = run_to_string(opt), b = run_to_string(opt);
  EXPECT_EQ(a, b);
  opt.seed = 43;
  EXPECT_NE(run_to_string(opt), a);
}

INSTANTIATE_TEST_SUITE_P(Engines, MicrogptRun, ::testing::Values(Engine::tensor, Engine::scalar),
                         [](const auto& param_info) {
                           return std::string(microgpt::engine_name(param_info.param));
                         });

// The tensor engine's loss and every gradient are the same bytes at every kernel level, for
// the default shape and for one whose widths (12) take the plain loops of matmul/exact.h.
TEST(MicrogptTensorEngine, SameLossAndGradientsAtEveryLevel) {
  const CharTokenizer tok = CharTokenizer::from_chars("abcdefghijklmnopqrstuvwxyz");
  for (const microgpt::Config& c : {microgpt::Config{}, microgpt::Config{27, 12, 3, 2, 6}}) {
    auto model = microgpt::make_model(c, Engine::tensor);
    for (size_t i = 0; i < model->params().size(); ++i) {
      model->params()[i] = 0.08 * std::sin(0.37 * static_cast<double>(i) + 0.11);
    }
    const std::vector<int> tokens = tok.encode_document("christopher");
    test::expect_same_at_every_level(
        [&] {
          model->zero_grads();
          const double loss = model->loss_and_grad(tokens);
          std::vector<double> out(model->grads().begin(), model->grads().end());
          out.push_back(loss);
          return out;
        },
        "n_embd " + std::to_string(c.n_embd));
  }
}

TEST(MicrogptRunErrors, BadOptionsAndFiles) {
  test::TempDir dir;
  MicrogptOptions opt;
  opt.data_path = dir.file("missing.txt");
  EXPECT_THROW(run_to_string(opt), Error);
  test::write_text(dir.file("blank.txt"), "\n  \n\t\n");
  opt.data_path = dir.file("blank.txt");
  EXPECT_THROW(run_to_string(opt), Error);
  opt.data_path = test::source_path("data/names.txt");
  opt.steps = -1;
  EXPECT_THROW(run_to_string(opt), Error);
  opt.steps = 1;
  opt.temperature = 0.0;
  EXPECT_THROW(run_to_string(opt), Error);
  opt.temperature = 0.5;
  opt.model.n_head = 5;
  EXPECT_THROW(run_to_string(opt), Error);
  opt.model.n_head = 4;
  opt.load_path = dir.file("nope.safetensors");
  EXPECT_THROW(run_to_string(opt), Error);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::train
