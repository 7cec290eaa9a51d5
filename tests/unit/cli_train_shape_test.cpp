// `tinylm train --arch gpt2` in any shape, as nanoGPT users give it: --n-layer, --n-head,
// --n-embd, --block-size and --bias take effect (over --preset's fields), --seq-len follows
// --block-size, and a shape flag that does not apply is refused, naming the arch.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/models/gpt2/config.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_json(const std::string& path) { return json::parse(read_text(path)); }

// The shape a run's latest checkpoint holds (its config.json).
void expect_model_shape(const std::string& run, int layers, int heads, int width, int positions) {
  const json model = read_json(run + "/latest/config.json");
  EXPECT_EQ(model["n_layer"], layers);
  EXPECT_EQ(model["n_head"], heads);
  EXPECT_EQ(model["n_embd"], width);
  EXPECT_EQ(model["n_positions"], positions);
}

class CliTrainShape : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(data_, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 30000));
  }
  // A gpt2 run of `steps` steps of 2 rows with `flags`, on the text's characters (quick) unless
  // they say otherwise; its directory.
  std::string train(const std::string& flags, int steps = 1) {
    const std::string run = tmp_.file("run" + std::to_string(runs_++));
    const std::string vocab =
        flags.find("--tokenizer") == std::string::npos ? " --tokenizer char" : "";
    const CommandResult r =
        run_cli("train --arch gpt2 --batch 2 --eval-batches 1 --threads 1 --steps " +
                std::to_string(steps) + vocab + " " + flags + " --data " + data_ + " --out " + run);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
    return run;
  }
  void expect_refused(const std::string& flags, const std::string& fragment) {
    SCOPED_TRACE(flags);
    const std::string run = tmp_.file("refused");
    const CommandResult r = run_cli("train " + flags + " --data " + data_ + " --out " + run);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(run)) << "the run directory was written";
  }

  TempDir tmp_;
  const std::string data_ = tmp_.file("text.txt");
  int runs_ = 0;
};

TEST_F(CliTrainShape, EachShapeFlagShapesTheModelAndBlockSizeIsTheSequence) {
  const std::string run = train("--n-layer 1 --n-head 2 --n-embd 32 --block-size 48");
  expect_model_shape(run, 1, 2, 32, 48);
  const json config = read_json(run + "/run.json");
  EXPECT_EQ(config["seq-len"], 48) << "--seq-len follows --block-size";
  EXPECT_EQ(config["n-layer"], 1);
  EXPECT_EQ(config["block-size"], 48);
  EXPECT_EQ(config["bias"], true);
}

TEST_F(CliTrainShape, PresetsAreShortcutsWhoseFieldsFlagsOverride) {
  // nanoGPT's baby GPT, one field overridden, the sequence shortened below its positions.
  const std::string run = train("--preset baby --n-layer 1 --seq-len 32");
  expect_model_shape(run, 1, 6, 384, 256);
  EXPECT_EQ(read_json(run + "/run.json")["seq-len"], 32);
  // small-test's 128 positions give the sequence its length (the default of 256 was refused).
  const json small = read_json(train("--preset small-test") + "/run.json");
  EXPECT_EQ(small["seq-len"], 128);
  EXPECT_EQ(small["n-embd"], 64);
}

// --bias false: every bias (the linear layers' and the LayerNorms') stays exactly zero while the
// other parameters train; the export holds them as zeros, the same function as none.
TEST_F(CliTrainShape, BiasFalseHoldsEveryBiasAtZero) {
  const std::string shape = "--preset small-test --seq-len 32 --lr 1e-2 --warmup 0";
  // (On the GPU too, where there is one: the backward's zeros are the backend's.)
  std::vector<std::pair<bool, std::string>> runs = {{false, ""}, {true, ""}};
  if (!test::no_gpu()) runs.emplace_back(false, " --device gpu");
  for (const auto& [bias, device] : runs) {
    SCOPED_TRACE(device);
    SCOPED_TRACE(bias);
    const std::string run = train(shape + device + " --bias " + (bias ? "true" : "false"), 3);
    const checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(run + "/latest");
    const ParamLayout layout = gpt2::param_layout(ck.config);
    size_t biases = 0, trained = 0;
    for (const ParamEntry& e : layout.entries()) {
      const auto begin = ck.params.begin() + static_cast<std::ptrdiff_t>(e.offset);
      const bool zero = std::all_of(begin, begin + static_cast<std::ptrdiff_t>(e.numel),
                                    [](float v) { return v == 0.0f; });
      if (e.role == ParamRole::bias) {
        ++biases;
        EXPECT_EQ(zero, !bias) << e.name;
      } else {
        trained += !zero;
      }
    }
    EXPECT_EQ(biases, 2u * 6 + 1) << "ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj a block; ln_f";
    EXPECT_EQ(trained, layout.entries().size() - biases);
    EXPECT_EQ(read_json(run + "/run.json")["bias"], bias);
  }
}

TEST_F(CliTrainShape, FlagsThatDoNotApplyAreRefusedNamingTheArch) {
  const std::string gpt2 = "--arch gpt2 --preset small-test";
  expect_refused(gpt2 + " --d-model 64",
                 "--d-model does not apply to --arch gpt2 (only to evermind)");
  expect_refused(gpt2 + " --mixed-precision", "--mixed-precision does not apply to --arch gpt2");
  expect_refused(gpt2 + " --vocab-size 300", "--vocab-size does not apply to --arch gpt2");
  expect_refused("--arch evermind --bias false",
                 "--bias does not apply to --arch evermind (only to gpt2)");
  expect_refused("--arch evermind --dropout 0.1", "--dropout does not apply to --arch evermind");
  expect_refused("--arch evermind --n-head 4",
                 "--n-head does not apply to --arch evermind (only to gpt2 and microgpt)");
  expect_refused("--arch microgpt --preset mini", "--preset does not apply to --arch microgpt");
  expect_refused("--arch microgpt --tokenizer " + data_,
                 "--tokenizer does not apply to --arch microgpt");
  expect_refused("--arch microgpt --aux-loss-coef 0.5", "--aux-loss-coef does not apply");
  expect_refused("--arch microgpt --seq-len 8",  // (a step is one document, up to --block-size)
                 "--seq-len does not apply to --arch microgpt (only to gpt2 and evermind)");
  // Shapes that cannot work, with what to change.
  expect_refused(gpt2 + " --seq-len 256",
                 "--seq-len 256 is longer than the model's 128 positions: lower --seq-len or "
                 "raise --block-size");
  expect_refused(gpt2 + " --n-embd 100 --n-head 3", "must be divisible by n_head");
  expect_refused(gpt2 + " --n-layer 4000 --n-embd 16384 --n-head 128",
                 "parameters need about");  // terabytes, before any allocation
  expect_refused("--arch gpt2 --preset huge", "--preset: unknown gpt2 preset 'huge'");
  expect_refused(gpt2 + " --bias maybe", "--bias");
  // A model from --init-from has its own shape.
  const std::string model = train("--preset small-test --seq-len 32") + "/latest";
  expect_refused("--init-from " + model + " --n-layer 3", "--n-layer sets a fresh model's shape");
  expect_refused("--init-from " + model + " --bias false", "--bias sets a fresh model's shape");
}

// `train --help` lists each setting's default per arch, "-" where that arch refuses the flag,
// "Only --arch F:" for the flags one family alone takes and "Otherwise:" for those every arch
// takes, in lines of at most 100 columns: each claim is checked against what `train` does with
// the flag (a missing --data file is the only other error it can meet).
TEST_F(CliTrainShape, HelpsDefaultsSayWhichArchRefusesEachFlag) {
  const std::string help = run_cli("train --help").out;
  const size_t table = help.find("Defaults by --arch (");
  ASSERT_NE(table, std::string::npos) << help;
  std::vector<std::string> archs;
  {
    std::istringstream names(help.substr(table + 20, help.find(';', table) - table - 20));
    for (std::string name, slash; names >> name; names >> slash) archs.push_back(name);
  }
  ASSERT_EQ(archs, (std::vector<std::string>{"gpt2", "evermind", "microgpt"}));
  // Whether `train --arch ARCH` refuses FLAG given as VALUE (JSON) in a config file.
  const auto refused = [&](const std::string& arch, const std::string& flag,
                           const std::string& value) {
    const std::string config = tmp_.file("flag.json");
    write_text(config, "{\"" + flag + "\": " + value + "}");
    const CommandResult r = run_cli("train --arch " + arch + " --config " + config + " --data " +
                                    tmp_.file("missing.txt") + " --out " + tmp_.file("never"));
    EXPECT_NE(r.exit_code, 0) << r.err;
    return r.err.find("does not apply to --arch " + arch) != std::string::npos;
  };
  // The table's lines, each with its continuations ("    --flag value ...") joined on.
  std::vector<std::string> joined;
  std::istringstream lines(help.substr(table));
  for (std::string line; std::getline(lines, line) && !line.starts_with("GPT-2 training");) {
    EXPECT_LE(line.size(), 100u) << line;
    if (line.starts_with("    ") && !joined.empty()) {
      joined.back() += line.substr(3);
    } else {
      joined.push_back(line);
    }
  }
  int rows = 0, only = 0, common = 0;
  for (const std::string& line : joined) {
    if (line.starts_with("  --")) {  // "  --flag: a / b / c"
      const size_t colon = line.find(':');
      const std::string flag = line.substr(4, colon - 4);
      std::vector<std::string> cells;
      for (size_t at = colon + 2; at <= line.size();) {
        const size_t end = std::min(line.find(" / ", at), line.size());
        cells.push_back(line.substr(at, end - at));
        at = end + 3;
      }
      ASSERT_EQ(cells.size(), archs.size()) << line;
      const std::string value =
          *std::find_if(cells.begin(), cells.end(), [](const std::string& c) { return c != "-"; });
      for (size_t i = 0; i < archs.size(); ++i)
        EXPECT_EQ(refused(archs[i], flag, value), cells[i] == "-") << archs[i] << ": " << line;
      ++rows;
    } else if (line.starts_with("Only --arch ") || line.starts_with("Otherwise:")) {
      // "Only --arch F: --a 1 --b "x"": F alone takes them; "Otherwise: ...": every arch does.
      const std::string arch =
          line.starts_with("Only") ? line.substr(12, line.find(':') - 12) : std::string();
      std::istringstream pairs(line.substr(line.find(':') + 1));
      for (std::string flag, value; pairs >> flag >> value;) {
        for (const std::string& other : archs) {
          const bool takes = arch.empty() || other == arch;
          EXPECT_EQ(refused(other, flag.substr(2), value), !takes) << other << ": " << flag;
        }
        ++(arch.empty() ? common : only);
      }
    }
  }
  EXPECT_GE(rows, 10) << help;
  EXPECT_GE(only, 10) << help;
  EXPECT_GE(common, 10) << help;
}

// A run stored before the shape flags (its run.json has no "bias", and microgpt's defaults in
// the shape fields) resumes with its preset's shape, as it was trained.
TEST_F(CliTrainShape, ARunFromBeforeTheShapeFlagsResumesInItsPresetsShape) {
  const std::string run = train("--preset small-test --seq-len 32 --save-every 1", 2);
  json config = read_json(run + "/run.json");
  config.erase("bias");
  config["n-layer"] = 2;
  config["n-head"] = 4;
  config["n-embd"] = 16;
  config["block-size"] = 16;
  write_text(run + "/run.json", config.dump(2));
  const CommandResult r = run_cli("train --resume " + run + " --steps 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_json(run + "/latest/config.json")["n_embd"], 64);
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
