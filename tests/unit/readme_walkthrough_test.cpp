// The README's newcomer path (issue 39), its commands read from README.md and run as printed
// from an empty directory, with the Hugging Face Hub replaced by the Hub-shaped test server
// (HF_ENDPOINT) holding a tiny GPT-2 as openai-community/gpt2: get a model, generate, serve (with
// the chat request the README shows) and train your own (cut to a few steps and a short sample:
// the only changes).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "hub_test_server.h"
#include "test_util.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

// The command lines of README.md's ```sh blocks from the heading starting with `from` to the
// next "## " heading, comments dropped.
std::vector<std::string> readme_commands(const std::string& from) {
  std::ifstream in(test::source_path("README.md"));
  std::vector<std::string> out;
  bool section = false, block = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) section = line.rfind(from, 0) == 0;
    if (!section) continue;
    if (line.rfind("```", 0) == 0) {
      block = !block && line == "```sh";  // (a ```text block is output, not commands)
      continue;
    }
    if (!block) continue;
    if (const size_t hash = line.find("  #"); hash != std::string::npos) line.resize(hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

struct ReadmeWalkthrough : ::testing::Test {
  hub_test::FakeHub hub;
  test::TempDir dir;
  ReadmeWalkthrough() { hub.add("openai-community/gpt2", hub_test::tiny_repo()); }
  // A README line run in the empty directory, `tinylm` being the built binary.
  std::string shell_line(const std::string& line) const {
    std::string cmd = line;
    if (cmd.rfind("tinylm ", 0) == 0) cmd = std::string(TINYLM_CLI_PATH) + cmd.substr(6);
    return "cd " + dir.file("home") + " && env -u HF_TOKEN HF_ENDPOINT=" + hub.endpoint() +
           " TINYLM_CACHE=" + dir.file("cache") + " HF_HOME=" + dir.file("hf") + " " + cmd;
  }
  void SetUp() override { std::filesystem::create_directories(dir.file("home")); }
};

TEST_F(ReadmeWalkthrough, GetAModelGenerateAndServe) {
  std::vector<std::string> lines = readme_commands("## 2. Get a model");
  for (const std::string& l : readme_commands("## 3. Generate")) lines.push_back(l);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "tinylm download openai-community/gpt2");
  for (const std::string& line : lines) {
    const test::CommandResult r = test::run_shell(shell_line(line));
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
    if (line.find(" generate ") != std::string::npos) {
      EXPECT_FALSE(r.out.empty()) << line;  // the prompt and its completion
    }
  }

  // Serve, then the README's chat request (its model name a front-end's default) on the port
  // the server took: the README's 8080 may be busy on a test machine.
  if (test::run_shell("command -v curl").exit_code != 0) GTEST_SKIP() << "no curl";
  const std::vector<std::string> serve = readme_commands("## 4. Serve");
  ASSERT_EQ(serve.size(), 2u);
  ASSERT_EQ(serve[0].rfind("tinylm serve ", 0), 0u) << serve[0];
  ASSERT_EQ(serve[1].rfind("curl ", 0), 0u) << serve[1];
  std::string request = serve[1];
  const size_t at = request.find("localhost:8080");
  ASSERT_NE(at, std::string::npos) << request;
  request.replace(at, 14, "localhost:$port");
  const test::CommandResult chat = test::run_shell(test::serve_then(
      shell_line(serve[0] + " --port 0 --threads 1"), dir.file("serve.err"), request));
  EXPECT_EQ(chat.exit_code, 0) << test::read_text(dir.file("serve.err"));
  EXPECT_NE(chat.out.find("\"object\":\"chat.completion\""), std::string::npos) << chat.out;
  EXPECT_NE(chat.out.find("\"model\":\"openai-community/gpt2\""), std::string::npos) << chat.out;
}

TEST_F(ReadmeWalkthrough, TrainYourOwn) {
  const std::vector<std::string> lines = readme_commands("## 5. Train your own");
  ASSERT_EQ(lines.size(), 3u);
  for (std::string line : lines) {
    // The recipe's 2000 steps cut to 4 (flags given override its config file), and the sample
    // to 20 characters (past the 64-position context each one is a whole prefill).
    if (line.find(" train ") != std::string::npos)
      line += " --steps 4 --eval-every 4 --eval-batches 1 --threads 1";
    if (const size_t n = line.find(" -n 300"); n != std::string::npos) line.replace(n, 7, " -n 20");
    const test::CommandResult r = test::run_shell(shell_line(line));
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(dir.file("home/loss.svg")));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
