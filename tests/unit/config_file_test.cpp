// `tinylm train --config FILE`: the reader (train/config_file.h) on TOML and JSON, good and
// malformed, and the command line's precedence over the file in RUN/run.json.
#include "tinylm/train/config_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "tinylm/families/family.h"
#include "tinylm/train/run_config.h"

namespace tinylm::test {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

json read_config(const TempDir& tmp, const std::string& name, const std::string& text) {
  write_text(tmp.file(name), text);
  return train::read_config_file(tmp.file(name));
}

void expect_config_error(const TempDir& tmp, const std::string& name, const std::string& text,
                         const std::vector<std::string>& phrases) {
  SCOPED_TRACE(name + ":\n" + text);
  write_text(tmp.file(name), text);
  std::vector<std::string> all = {tmp.file(name) + ": "};
  all.insert(all.end(), phrases.begin(), phrases.end());
  expect_error([&] { train::read_config_file(tmp.file(name)); }, all);
}

const char* const kToml = R"(# nanoGPT's style: a page of settings
arch = "gpt2"
data = ["a.txt", "b.txt"]
n-layer = 4
lr = 1e-3
min_lr = 1e-4          # an underscore: the same key as min-lr
mixed-precision = true
seed = 1337
warmup = -1
)";

TEST(ConfigFile, TomlKeepsItsTypes) {
  TempDir tmp;
  const json j = read_config(tmp, "c.toml", kToml);
  const std::vector<std::string> keys = {
      "arch", "data", "n-layer", "lr", "min-lr", "mixed-precision", "seed", "warmup"};
  std::vector<std::string> got;
  for (const auto& item : j.items()) got.push_back(item.key());
  EXPECT_EQ(got, keys);  // dashed, in the file's order
  EXPECT_EQ(j["arch"], "gpt2");
  EXPECT_EQ(j["data"], json::array({"a.txt", "b.txt"}));
  EXPECT_TRUE(j["n-layer"].is_number_integer());
  EXPECT_EQ(j["n-layer"], 4);
  EXPECT_TRUE(j["lr"].is_number_float());
  EXPECT_EQ(j["lr"].get<double>(), 1e-3);
  EXPECT_EQ(j["min-lr"].get<double>(), 1e-4);
  EXPECT_EQ(j["mixed-precision"], true);
  // As nlohmann reads JSON: a non-negative integer is unsigned (what `seed`, a uint64_t, takes).
  EXPECT_TRUE(j["seed"].is_number_unsigned());
  EXPECT_TRUE(j["warmup"].is_number_integer() && !j["warmup"].is_number_unsigned());
  EXPECT_EQ(j["warmup"], -1);
}

TEST(ConfigFile, JsonGivesTheSameSettingsAsToml) {
  TempDir tmp;
  const json from_toml = read_config(tmp, "c.toml", kToml);
  const json from_json = read_config(tmp, "c.json", R"({
    "arch": "gpt2", "data": ["a.txt", "b.txt"], "n_layer": 4, "lr": 1e-3, "min-lr": 1e-4,
    "mixed_precision": true, "seed": 1337, "warmup": -1
  })");
  EXPECT_EQ(from_json, from_toml);
  EXPECT_EQ(read_config(tmp, "empty.toml", "# nothing set\n"), json::object());
  EXPECT_EQ(read_config(tmp, "empty.json", "{}"), json::object());
}

TEST(ConfigFile, MergesLikeTheCommandLine) {
  TempDir tmp;
  const std::string path = tmp.file("c.toml");
  train::RunConfig c = train::defaults_for(families::trainable(), "gpt2");
  train::merge_json(c, read_config(tmp, "c.toml", kToml), path);
  EXPECT_EQ(c.n_layer, 4);
  EXPECT_EQ(c.min_lr, 1e-4);
  EXPECT_EQ(c.seed, 1337u);
  EXPECT_TRUE(c.mixed_precision);
  EXPECT_EQ(c.data, (std::vector<std::string>{"a.txt", "b.txt"}));
  // An integer for a float setting is fine; a float for an integer one is not.
  train::merge_json(c, read_config(tmp, "c.toml", "lr = 1\n"), path);
  EXPECT_EQ(c.lr, 1.0);
  expect_error([&] { train::merge_json(c, read_config(tmp, "c.toml", "steps = 3.0\n"), path); },
               {path + ": 'steps' has the wrong type"});
  expect_error([&] { train::merge_json(c, read_config(tmp, "c.toml", "lr = \"1e-3\"\n"), path); },
               {path + ": 'lr' has the wrong type"});
  expect_error([&] { train::merge_json(c, read_config(tmp, "c.toml", "data = [1, 2]\n"), path); },
               {path + ": 'data' has the wrong type"});
  // An unknown key keeps its spelling, so the message names what the file says.
  expect_error([&] { train::merge_json(c, read_config(tmp, "c.toml", "n_layers = 4\n"), path); },
               {path + ": unknown setting 'n_layers'"});
}

TEST(ConfigFile, BothSpellingsOfOneSettingAreRefused) {
  TempDir tmp;
  expect_config_error(tmp, "c.toml", "n_layer = 4\nlr = 1.0\nn-layer = 4\n",
                      {"'n_layer' and 'n-layer' (line 3) are the same setting"});
  expect_config_error(tmp, "c.json", R"({"min-lr": 0.1, "min_lr": 0.1})",
                      {"'min-lr' and 'min_lr' are the same setting"});
}

TEST(ConfigFile, NestedTablesAreRefused) {
  TempDir tmp;
  expect_config_error(tmp, "c.toml", "lr = 1.0\n[model]\nn_layer = 4\n",
                      {"'model' (line 2) is a table", "top level"});
  expect_config_error(tmp, "c.toml", "model.n_layer = 4\n", {"'model'", "is a table"});
  expect_config_error(tmp, "c.toml", "model = {n_layer = 4}\n", {"'model' (line 1) is a table"});
  expect_config_error(tmp, "c.toml", "[[model]]\nn_layer = 4\n",
                      {"'model'", "table within an array"});
  expect_config_error(tmp, "c.toml", "data = [[\"a\"], [\"b\"]]\n",
                      {"'data' (line 1)", "array or table within an array"});
  expect_config_error(tmp, "c.json", R"({"model": {"n_layer": 4}})",
                      {"'model' is an object", "top level"});
  expect_config_error(tmp, "c.json", R"({"data": [{"a": 1}]})", {"'data' holds an object"});
  expect_config_error(tmp, "c.json", R"({"data": [["a"]]})", {"'data' holds an array"});
}

TEST(ConfigFile, CommandLineFlagsAreRefusedInAFile) {
  TempDir tmp;
  for (const char* key : {"out", "resume", "config", "peak-gflops", "peak_gflops"}) {
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    expect_config_error(tmp, "c.toml", std::string(key) + " = \"x\"\n",
                        {std::string("'") + key +
                         "' (line 1) is not a setting a config file "
                         "may hold; pass --" +
                         flag + " on the command line"});
    expect_config_error(tmp, "c.json", std::string("{\"") + key + "\": 1}",
                        {std::string("'") + key + "' is not a setting", "--" + flag});
  }
}

TEST(ConfigFile, SyntaxErrorsNameTheFileLineAndColumn) {
  TempDir tmp;
  expect_config_error(tmp, "c.toml", "arch = \"gpt2\"\nsteps = 3\nlr = = 1\n",
                      {"TOML syntax error at line 3, column "});
  expect_config_error(tmp, "c.toml", "steps = 3\nsteps = 4\n", {"TOML syntax error at line 2"});
  expect_config_error(tmp, "c.json", "{\n  \"steps\": 3,\n  \"lr\": 1e-3,\n}\n",
                      {"invalid JSON", "line 4, column 1"});
  expect_config_error(tmp, "c.json", R"({"steps": 3, "steps": 4})", {"duplicate key 'steps'"});
  expect_config_error(tmp, "c.json", R"(["steps", 3])", {"not a JSON object at the top level"});
  expect_config_error(tmp, "c.json", "", {"invalid JSON"});
}

TEST(ConfigFile, OnlyTomlAndJsonByExtension) {
  TempDir tmp;
  for (const char* name : {"c.yaml", "c.py", "config", "c.toml.bak", "c.ini"}) {
    write_text(tmp.file(name), "steps = 3\n");
    expect_error([&] { train::read_config_file(tmp.file(name)); },
                 {tmp.file(name) + ": ", "TOML (.toml) or JSON (.json)"});
  }
}

TEST(ConfigFile, DevicesDirectoriesAndLargeFilesAreRefused) {
  TempDir tmp;
  fs::create_symlink("/dev/zero", tmp.path() / "zero.toml");
  expect_error([&] { train::read_config_file(tmp.file("zero.toml")); },
               {tmp.file("zero.toml") + ": ", "character device"});
  fs::create_directory(tmp.path() / "dir.json");
  expect_error([&] { train::read_config_file(tmp.file("dir.json")); },
               {tmp.file("dir.json") + ": ", "directory"});
  expect_error([&] { train::read_config_file(tmp.file("missing.toml")); },
               {tmp.file("missing.toml") + ": cannot open"});
  // One byte over the limit: refused before it is parsed, naming the limit.
  write_text(tmp.file("big.toml"), std::string(train::kMaxConfigFileBytes + 1, '#'));
  expect_error([&] { train::read_config_file(tmp.file("big.toml")); },
               {tmp.file("big.toml") + ": ", "1 MiB"});
  write_text(tmp.file("fits.toml"), std::string(train::kMaxConfigFileBytes - 1, '#') + "\n");
  EXPECT_EQ(train::read_config_file(tmp.file("fits.toml")), json::object());
}

// Every malformed file is one line that names it (the project's rule for every file loader).
TEST(ConfigFile, MalformedFilesAreOneLineErrorsNamingTheFile) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a.toml", "steps = "},
      {"b.toml", "steps = 3\nlr = 1e-3\n[unclosed\n"},
      {"c.toml", "steps = 3 4\n"},
      {"d.toml", "data = [\"a\",\n"},
      {"e.toml", "name = \"no end\n"},
      {"f.toml", "x = 1979-05-27T07:32:00Z\n"},
      {"g.toml", "t = 07:32:00\n"},
      {"h.toml", std::string("steps = 3\n\0\n", 12)},
      {"i.toml", "steps = 3\n\xff\xfe = 1\n"},
      {"j.toml", "data = \"a\\u0000b\"\n"},
      {"k.toml", "\"a\\nb\" = 1\n"},
      {"l.toml", "steps = 99999999999999999999\n"},
      {"m.toml", "[a]\n[a]\n"},
      {"n.toml", std::string(300, '[') + "\n"},
      {"o.toml", "a = " + std::string(300, '[') + "\n"},
      {"a.json", "{"},
      {"b.json", "{\"steps\": 3"},
      {"c.json", "{\"steps\": 3}}"},
      {"d.json", "null"},
      {"e.json", "\"steps\""},
      {"f.json", std::string(100, '[') + std::string(100, ']')},
      {"g.json", "{\"data\": \"a\\u0000b\"}"},
      {"h.json", "{\"a\\nb\": 1}"},
      {"i.json", "{\"steps\": 3, /* comment */ \"lr\": 1}"},
      {"j.json", "{\"s\xff\": 1}"},
      {"k.json", std::string("{\"steps\": 3}\0", 13)},
      {"l.json", "{\"data\": [[[\"a\"]]]}"},
  };
  for (const auto& [name, text] : cases) {
    SCOPED_TRACE(name);
    write_text(tmp.file(name), text);
    try {
      const json j = train::read_config_file(tmp.file(name));
      // A file that reads (none above should) must still fail the settings' own checks.
      train::RunConfig c = train::defaults_for(families::trainable(), "gpt2");
      const std::string path = tmp.file(name);
      expect_error([&] { train::merge_json(c, j, path); }, {path + ": "});
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind(tmp.file(name) + ": ", 0), 0u) << what;
    }
  }
}

// ---- the command line ----

json run_json(const std::string& run) { return json::parse(read_text(run + "/run.json")); }

void expect_one_line_error(const CommandResult& r, int exit_code,
                           const std::vector<std::string>& phrases) {
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const std::string& p : phrases) EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
}

TEST(CliTrainConfig, FlagsOverrideTheFile) {
  TempDir tmp;
  const std::string config = tmp.file("micro.toml");
  write_text(config, "arch = \"microgpt\"\ndata = [\"" + source_path("data/names.txt") +
                         "\"]\nsteps = 3\nlr = 0.002\nn_layer = 1\neval_batches = 2\n");
  const std::string run = tmp.file("run");
  const CommandResult r = run_cli("train --config " + config + " --lr 0.005 --out " + run);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = run_json(run);
  EXPECT_EQ(j["steps"], 3);    // the file's
  EXPECT_EQ(j["n-layer"], 1);  // the file's, spelled with an underscore there
  EXPECT_EQ(j["lr"], 0.005);   // the flag's
  EXPECT_EQ(j["arch"], "microgpt");
  EXPECT_EQ(j["beta1"], 0.85);  // microgpt's default: the file's arch chose the defaults
  EXPECT_TRUE(fs::exists(run + "/step-00000003/model.safetensors"));

  // The same settings as JSON, with --steps from the command line.
  const std::string config_json = tmp.file("micro.json");
  write_text(config_json, R"({"arch": "microgpt", "data": [")" + source_path("data/names.txt") +
                              R"("], "steps": 3, "lr": 0.002, "n-layer": 1, "eval-batches": 2})");
  const std::string run2 = tmp.file("run2");
  const CommandResult r2 = run_cli("train --config " + config_json + " --steps 2 --out " + run2);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(run_json(run2)["steps"], 2);
  EXPECT_EQ(run_json(run2)["lr"], 0.002);

  // On --resume the file's settings are flags: a fixed one that differs is refused, naming it;
  // a cadence one (steps) continues the run.
  write_text(tmp.file("other-lr.toml"), "lr = 0.5\n");
  expect_one_line_error(run_cli("train --resume " + run + " --config " + tmp.file("other-lr.toml")),
                        2, {"--lr 0.5 differs"});
  write_text(tmp.file("more.toml"), "steps = 4\nlr = 0.005\n");
  const CommandResult more =
      run_cli("train --resume " + run + " --config " + tmp.file("more.toml"));
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_TRUE(fs::exists(run + "/step-00000004/model.safetensors"));
}

TEST(CliTrainConfig, ABadFileIsOneLineNamingItAndNothingIsWritten) {
  TempDir tmp;
  const std::string names = source_path("data/names.txt");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"syntax.toml", "steps = = 3\n"},      {"unknown.toml", "n_layerz = 3\n"},
      {"type.toml", "steps = 3.5\n"},        {"nested.json", R"({"model": {"n_layer": 1}})"},
      {"out.toml", "out = \"elsewhere\"\n"}, {"twice.toml", "n_layer = 1\nn-layer = 1\n"},
  };
  for (const auto& [name, text] : cases) {
    SCOPED_TRACE(name);
    write_text(tmp.file(name), text);
    expect_one_line_error(run_cli("train --arch microgpt --data " + names + " --config " +
                                  tmp.file(name) + " --out " + tmp.file("run")),
                          1, {"tinylm: error: " + tmp.file(name) + ": "});
    EXPECT_FALSE(fs::exists(tmp.file("run")));
  }
  write_text(tmp.file("c.yaml"), "steps: 3\n");
  expect_one_line_error(run_cli("train --arch microgpt --data " + names + " --config " +
                                tmp.file("c.yaml") + " --out " + tmp.file("run")),
                        1, {tmp.file("c.yaml") + ": ", ".toml"});
  // A value the flag itself would refuse is the flag's usage error, as on the command line.
  write_text(tmp.file("range.toml"), "beta1 = 1.5\n");
  expect_one_line_error(run_cli("train --arch microgpt --data " + names + " --config " +
                                tmp.file("range.toml") + " --out " + tmp.file("run")),
                        2, {"--beta1"});
  EXPECT_FALSE(fs::exists(tmp.file("run")));
}

// The fuzz target's stored seeds (tests/fuzz/corpus/config_file): the valid ones read, each
// invalid one is refused by `train --config` in one line naming it, with nothing written.
TEST(CliTrainConfig, TheFuzzCorpusInvalidFilesAreRefused) {
  TempDir tmp;
  const std::string names = source_path("data/names.txt");
  int valid = 0, invalid = 0;
  for (const auto& e : fs::directory_iterator(source_path("tests/fuzz/corpus/config_file"))) {
    const std::string path = e.path().string(), name = e.path().filename().string();
    SCOPED_TRACE(name);
    if (name.starts_with("valid_")) {
      EXPECT_TRUE(train::read_config_file(path).is_object());
      ++valid;
    } else if (name.starts_with("invalid_")) {
      expect_one_line_error(run_cli("train --arch microgpt --data " + names + " --config " + path +
                                    " --out " + tmp.file("run")),
                            1, {"tinylm: error: " + path + ": "});
      EXPECT_FALSE(fs::exists(tmp.file("run")));
      ++invalid;
    }
  }
  EXPECT_GE(valid, 3);
  EXPECT_GE(invalid, 10);
}

// The shipped configs (configs/): they name no data, so they work from any directory with
// --data, and they set up the runs they say (here stopped before the first step, the flags
// winning).
TEST(CliTrainConfig, ShippedConfigsSetUpTheRunsTheySay) {
  TempDir tmp;
  const std::string data = tmp.file("text.txt");
  write_text(data, read_text(source_path("data/tinyshakespeare.txt")).substr(0, 30000));
  struct Want {
    const char* file;
    int64_t layers, width, positions;
    double dropout;
  };
  for (const Want& want : {Want{"configs/shakespeare_char.toml", 4, 128, 64, 0.0},
                           Want{"configs/baby.toml", 6, 384, 256, 0.2}}) {
    SCOPED_TRACE(want.file);
    const json file = train::read_config_file(source_path(want.file));
    EXPECT_FALSE(file.contains("data")) << "a shipped config names no data";
    const std::string run = tmp.file(fs::path(want.file).stem().string());
    const CommandResult r = run_cli("train --config " + source_path(want.file) +
                                    " --steps 0 --batch 2 --eval-batches 1 --threads 1 --data " +
                                    data + " --out " + run);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json config = json::parse(read_text(run + "/run.json"));
    EXPECT_EQ(config["tokenizer"], "char");
    EXPECT_EQ(config["bias"], false);
    EXPECT_EQ(config["n-layer"], want.layers);
    EXPECT_EQ(config["n-embd"], want.width);
    EXPECT_EQ(config["block-size"], want.positions);
    EXPECT_EQ(config["seq-len"], want.positions);
    EXPECT_EQ(config["dropout"], want.dropout);
    EXPECT_EQ(config["beta2"], 0.99);
    EXPECT_EQ(config["batch"], 2) << "the flag wins";
    // The model's vocabulary: the 58 characters of the first 30,000 of tinyshakespeare.
    EXPECT_NE(r.err.find("tokenizer: 58 tokens, the data's characters"), std::string::npos)
        << r.err;
  }
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::test
