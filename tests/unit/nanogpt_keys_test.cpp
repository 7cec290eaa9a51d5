// train/nanogpt_keys.h: what `tinylm train` and `tinylm generate` say to a nanoGPT user who
// writes nanoGPT's names. Every configuration key of nanoGPT's train.py and sample.py is either
// a flag of the matching command by its own name or gets a hint, and every flag and command a
// hint names exists; the command line and a config file both give the hint, and a nanoGPT
// config file (Python) is answered with the recipe of configs/ that it is.
#include "tinylm/train/nanogpt_keys.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/train/config_file.h"
#include "tinylm/train/run_config.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

using train::nanogpt_hint;
using train::NanoGptScript;

// `/usr/bin/python3 tools/nanogpt_keys.py NANOGPT` on karpathy/nanoGPT 3adf61e1.
const char* const kTrainPy =
    "out_dir eval_interval log_interval eval_iters eval_only always_save_checkpoint init_from "
    "wandb_log wandb_project wandb_run_name dataset batch_size block_size n_layer n_head n_embd "
    "dropout bias learning_rate max_iters weight_decay beta1 beta2 grad_clip decay_lr "
    "warmup_iters lr_decay_iters min_lr backend device dtype compile";
const char* const kSamplePy =
    "init_from out_dir start num_samples max_new_tokens temperature top_k seed device dtype "
    "compile";

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// The long flags a command's --help lists ("  -m,--model TEXT ...": --model).
std::set<std::string> flags_of(const std::string& command) {
  const CommandResult r = run_cli(command + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> flags;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  -", 0) != 0) continue;
    std::istringstream names(line.substr(2, line.find(' ', 2) - 2));
    for (std::string n; std::getline(names, n, ',');) {
      if (n.rfind("--", 0) == 0) flags.insert(n);
    }
  }
  EXPECT_GT(flags.size(), 10u) << r.out;
  return flags;
}

void check_script(NanoGptScript script, const char* keys, const std::string& command) {
  const std::set<std::string> flags = flags_of(command);
  const std::string commands = run_cli("--help").out;
  int hints = 0;
  for (const std::string& key : words(keys)) {
    SCOPED_TRACE(command + " --" + key);
    const std::string hint = nanogpt_hint(script, key, "--");
    if (flags.contains("--" + key)) {
      EXPECT_EQ(hint, "");  // the flag is nanoGPT's name: nothing to say
      continue;
    }
    ASSERT_NE(hint, "");
    ++hints;
    EXPECT_EQ(hint.rfind("nanoGPT's " + key + " ", 0), 0u) << hint;
    // Every flag the hint names is the command's, every command it names tinylm's.
    const std::regex flag(R"(--[a-z][a-z0-9-]*)"), cmd(R"(tinylm ([a-z-]+))");
    for (std::sregex_iterator m(hint.begin(), hint.end(), flag), end; m != end; ++m) {
      EXPECT_TRUE(flags.contains(m->str())) << m->str() << " in: " << hint;
    }
    for (std::sregex_iterator m(hint.begin(), hint.end(), cmd), end; m != end; ++m) {
      EXPECT_NE(commands.find("  " + (*m)[1].str() + " "), std::string::npos)
          << (*m)[1] << " in: " << hint;
    }
  }
  EXPECT_GE(hints, 5);
}

TEST(NanoGptKeys, EveryTrainPyKeyIsAFlagOrHasAHint) {
  check_script(NanoGptScript::train, kTrainPy, "train");
}

TEST(NanoGptKeys, EverySamplePyKeyIsAFlagOrHasAHint) {
  check_script(NanoGptScript::sample, kSamplePy, "generate");
}

TEST(NanoGptKeys, HintsNameTheFlagAndOnlyNanoGptsKeys) {
  EXPECT_EQ(nanogpt_hint(NanoGptScript::train, "batch_size", "--"),
            "nanoGPT's batch_size is --batch here");
  EXPECT_EQ(nanogpt_hint(NanoGptScript::train, "batch-size", ""),
            "nanoGPT's batch_size is batch here");
  EXPECT_EQ(
      nanogpt_hint(NanoGptScript::train, "compile", "--"),
      "nanoGPT's compile has no counterpart here: tinylm's kernels are compiled ahead of time");
  EXPECT_EQ(nanogpt_hint(NanoGptScript::sample, "num_samples", "--"),
            "nanoGPT's num_samples is --samples here");
  EXPECT_EQ(nanogpt_hint(NanoGptScript::train, "num_samples", "--"), "");  // sample.py's
  EXPECT_EQ(nanogpt_hint(NanoGptScript::train, "batchsize", "--"), "");
  EXPECT_EQ(nanogpt_hint(NanoGptScript::train, "", "--"), "");
}

TEST(NanoGptKeys, TheCommandLineAndAConfigFileGiveTheHint) {
  // nanoGPT's own CPU command line, pasted: the first flag tinylm does not take is named, with
  // what to write instead, as a usage error.
  const CommandResult r = run_cli(
      "train --device=cpu --compile=False --eval_iters=20 --log_interval=1 --block_size=64 "
      "--batch_size=12");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("train: unknown flag --compile: nanoGPT's compile has no counterpart "
                       "here: tinylm's kernels are compiled ahead of time; tinylm train --help"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  const CommandResult s = run_cli("generate -m x --num_samples=3");
  EXPECT_EQ(s.exit_code, 2) << s.err;
  EXPECT_NE(s.err.find("unknown flag --num_samples: nanoGPT's num_samples is --samples here"),
            std::string::npos)
      << s.err;
  // A name nanoGPT does not have gets the usual treatment.
  const CommandResult t = run_cli("train --text x");
  EXPECT_NE(t.err.find("unknown flag --text;"), std::string::npos) << t.err;

  // nanoGPT's way to give a config, `train.py config/X.py`: which of configs/ is its recipe,
  // whether the .py is given bare or as --config; a TOML or JSON file given bare: --config.
  const std::string py =
      "configs/baby.toml is its config/train_shakespeare_char.py, "
      "configs/shakespeare_char.toml that with the CPU overrides of its README";
  const CommandResult bare_py = run_cli("train config/train_shakespeare_char.py");
  EXPECT_EQ(bare_py.exit_code, 2) << bare_py.err;
  EXPECT_NE(bare_py.err.find("unexpected argument 'config/train_shakespeare_char.py': train takes "
                             "flags only; nanoGPT's Python configs are not read: " +
                             py),
            std::string::npos)
      << bare_py.err;
  for (const char* f : {"configs/baby.toml", "configs/shakespeare_char.toml"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(std::string(TINYLM_SOURCE_DIR) + "/" + f)) << f;
  }
  EXPECT_NE(run_cli("train configs/baby.toml").err.find("give it as --config configs/baby.toml"),
            std::string::npos);

  TempDir tmp;
  write_text(tmp.file("train_shakespeare_char.py"), "batch_size = 12\n");
  expect_error([&] { train::read_config_file(tmp.file("train_shakespeare_char.py")); },
               {"train_shakespeare_char.py: a config file is TOML (.toml) or JSON (.json)", py});
  write_text(tmp.file("c.toml"), "n_layer = 4\nbatch_size = 12\n");
  train::RunConfig c;
  expect_error([&] { train::merge_json(c, train::read_config_file(tmp.file("c.toml")), "c.toml"); },
               {"c.toml: unknown setting 'batch_size' (nanoGPT's batch_size is batch here)"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
