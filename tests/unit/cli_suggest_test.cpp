// main.cpp's "did you mean" (apps/tinylm/suggest.h).
#include <gtest/gtest.h>

#include "suggest.h"

namespace tinylm::cli {
namespace TINYLM_TEST_LOCAL {

TEST(CliSuggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("train", "train"), 0u);
  EXPECT_EQ(edit_distance("trian", "train"), 1u);  // two letters swapped: one edit
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);       // (a swap is not edited again)
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(CliSuggest, ClosestIsALikelyTypoOrNothing) {
  const std::vector<std::string> commands = {"train", "train-gpt2", "generate", "serve"};
  EXPECT_EQ(closest("trian", commands), "train");
  EXPECT_EQ(closest("generat", commands), "generate");
  EXPECT_EQ(closest("completely-different", commands), "");
  EXPECT_EQ(closest("--hlep", {"--help", "--version"}), "--help");
  // A word that begins one name only is that name, however far in edits.
  EXPECT_EQ(closest("--max", {"--max-tokens", "--model"}), "--max-tokens");
  EXPECT_EQ(closest("gen", commands), "generate");
  // Two names begin with it: the edit distance decides.
  EXPECT_EQ(closest("tra", commands), "train");
  // Two letters: every other short flag is one edit away, so nothing is guessed.
  EXPECT_EQ(closest("-n", {"-h", "-m"}), "");
}

TEST(CliSuggest, FlagsAreComparedByTheirWords) {
  const std::vector<std::string> flags = {"--help",        "--file", "--stride", "--n-layer",
                                          "--temperature", "--temp", "--batch",  "--block-size"};
  // The dashes in front are not letters a typo shares: three edits of four letters is no typo.
  EXPECT_EQ(closest("--text", flags), "");
  // Underscores are dashes, as Python's flags spell them.
  EXPECT_EQ(closest("--n_layer", flags), "--n-layer");
  EXPECT_EQ(closest("--temprature", flags), "--temperature");
  EXPECT_EQ(closest("--bacth", flags), "--batch");
  // batch-size is three edits from block-size: a different word, not a typo of it.
  EXPECT_EQ(closest("--batch-size", flags), "");
  // Of the names a word begins, the nearest.
  EXPECT_EQ(closest("--tem", flags), "--temp");
  EXPECT_EQ(closest("---", flags), "");  // dashes alone begin every name
}

TEST(CliSuggest, UnknownFlagIsTheFirstNotOfTheCommand) {
  const std::vector<std::string> flags = {"--steps", "--data"};
  std::vector<std::string> args = {"tinylm", "train", "--steps=3", "x", "--step", "--bad"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  EXPECT_EQ(unknown_flag(flags, static_cast<int>(argv.size()), argv.data(), 2), "--step");
  args[4] = "--";
  argv[4] = args[4].data();
  EXPECT_EQ(unknown_flag(flags, static_cast<int>(argv.size()), argv.data(), 2), "");
  // Short flags too ("-n5" is -n), but not negative numbers.
  std::vector<std::string> shorts = {"tinylm", "generate", "-m", "x", "--seed", "-3", "-n5"};
  std::vector<char*> sargv;
  for (std::string& a : shorts) sargv.push_back(a.data());
  EXPECT_EQ(unknown_flag({"-m", "--seed"}, static_cast<int>(sargv.size()), sargv.data(), 2), "-n");
  EXPECT_EQ(unknown_flag({"-m", "--seed", "-n"}, static_cast<int>(sargv.size()), sargv.data(), 2),
            "");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::cli
