// main.cpp's "did you mean" (apps/tinylm/suggest.h).
#include <gtest/gtest.h>

#include "suggest.h"

namespace tinylm::cli {
namespace {

TEST(CliSuggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("train", "train"), 0u);
  EXPECT_EQ(edit_distance("trian", "train"), 2u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(CliSuggest, ClosestIsALikelyTypoOrNothing) {
  const std::vector<std::string> commands = {"train", "train-gpt2", "generate", "serve"};
  EXPECT_EQ(closest("trian", commands), "train");
  EXPECT_EQ(closest("generat", commands), "generate");
  EXPECT_EQ(closest("completely-different", commands), "");
  EXPECT_EQ(closest("--hlep", {"--help", "--version"}), "--help");
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
}

}  // namespace
}  // namespace tinylm::cli
