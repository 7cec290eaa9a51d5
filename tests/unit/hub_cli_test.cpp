// tinylm download and --model hf:REPO through the CLI binary, against the Hub-shaped server of
// hub_test_server.h (HF_ENDPOINT), with the cache in a temporary directory (TINYLM_CACHE).
#include <filesystem>

#include "hub_test_server.h"
#include "test_util.h"

namespace tinylm {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

using test::count_lines;

// The error's line: stderr's last line, which must be the one "tinylm: error:" line (an hf:
// model's download may say what it fetches before it).
std::string error_line(const std::string& err) {
  const size_t at = err.find("tinylm: error: ");
  if (at == std::string::npos || err.find("tinylm: error: ", at + 1) != std::string::npos)
    return "";
  const std::string line = err.substr(at);
  return count_lines(line) == 1 ? line : "";
}

struct HubCli : ::testing::Test {
  hub_test::FakeHub hub;
  test::TempDir dir;
  HubCli() { hub.add("org/tiny", hub_test::tiny_repo()); }
  // The CLI with the Hub at `endpoint` (default: the fake one) and the cache in dir; no HF cache
  // or token of the machine's.
  test::CommandResult cli(const std::string& args, const std::string& endpoint = "") {
    return test::run_shell(
        "env -u HF_TOKEN HF_ENDPOINT=" + (endpoint.empty() ? hub.endpoint() : endpoint) +
        " TINYLM_CACHE=" + dir.file("cache") + " HF_HOME=" + dir.file("hf") + " " +
        TINYLM_CLI_PATH + " " + args);
  }
};

TEST_F(HubCli, DownloadThenGenerateFromTheCacheOffline) {
  const std::string out = dir.file("model");
  const test::CommandResult d = cli("download org/tiny --out " + out);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, out + "\n");
  EXPECT_NE(d.err.find("model.safetensors: 708.0 KB, 100%"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("org/tiny@main: commit " + hub_test::tiny_repo().commit), std::string::npos)
      << d.err;
  EXPECT_TRUE(fs::is_regular_file(out + "/model.safetensors"));

  // The fixture run directly, with its tokenizer: what the Hub's copy must generate.
  const std::string gen = " --prompt hello --max-tokens 8 --threads 1";
  const test::CommandResult want =
      test::run_cli("generate --model " + test::source_path("tests/fixtures/gpt2/tiny") +
                    " --tokenizer " + test::source_path("tests/fixtures/gguf/tokenizer") + gen);
  ASSERT_EQ(want.exit_code, 0) << want.err;
  // From the cache, with nothing listening at the endpoint: no network is needed.
  const test::CommandResult from_cache =
      cli("generate --model hf:org/tiny" + gen, "http://127.0.0.1:1");
  ASSERT_EQ(from_cache.exit_code, 0) << from_cache.err;
  EXPECT_EQ(from_cache.out, want.out);
  // serve names the model by its repository (stopped by SIGTERM once it is listening).
  const test::CommandResult served = test::run_shell(
      "TINYLM_CACHE=" + dir.file("cache") + " HF_ENDPOINT=http://127.0.0.1:1 timeout 3 " +
      TINYLM_CLI_PATH + " serve --model hf:org/tiny --port 0 --threads 1");
  EXPECT_NE(served.err.find("tinylm serve: model 'org/tiny'"), std::string::npos) << served.err;
  const test::CommandResult tok = cli("tokenize --model hf:org/tiny hello", "http://127.0.0.1:1");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  const test::CommandResult tok_want = test::run_cli(
      "tokenize --tokenizer " + test::source_path("tests/fixtures/gguf/tokenizer") + " hello");
  ASSERT_EQ(tok_want.exit_code, 0) << tok_want.err;
  EXPECT_FALSE(tok.out.empty());
  EXPECT_EQ(tok.out, tok_want.out);
  // convert resolves hf: before it looks at the file.
  const test::CommandResult gguf =
      cli("convert hf:org/tiny " + dir.file("tiny.gguf"), "http://127.0.0.1:1");
  ASSERT_EQ(gguf.exit_code, 0) << gguf.err;
  EXPECT_TRUE(fs::is_regular_file(dir.file("tiny.gguf")));
  const test::CommandResult from_out = cli("generate --model " + out + gen);
  ASSERT_EQ(from_out.exit_code, 0) << from_out.err;
  EXPECT_EQ(from_out.out, want.out);
}

TEST_F(HubCli, HfModelDownloadsWhenMissing) {
  test::write_text(dir.file("text.txt"), "hello hello hello world, hello world\n");
  const test::CommandResult r =
      cli("perplexity --model hf:org/tiny --file " + dir.file("text.txt") + " --context 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("perplexity"), std::string::npos);
  EXPECT_NE(r.err.find("org/tiny@main: downloading from " + hub.endpoint()), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir.file("cache") + "/hub/models--org--tiny/refs/main"));
}

TEST_F(HubCli, ErrorsAreOneLineWithTheirExitCodes) {
  hub_test::HubRepo gated = hub_test::tiny_repo();
  gated.token = "secret";
  hub.add("org/gated", gated);
  test::write_text(dir.file("file"), "x");
  struct Case {
    std::string args, phrase;
    int code;
  };
  for (const Case& c : std::vector<Case>{
           {"download org/none", "RepoNotFound", 1},
           {"download org/tiny@v9", "RevisionNotFound", 1},
           {"download org/gated", "access denied (gated or private repository; set HF_TOKEN)", 1},
           {"generate --model hf:org/gated --prompt hi", "access denied", 1},
           {"download a/b/c", "not a Hub repository", 2},
           {"generate --model hf:a/b/c --prompt hi", "not a Hub repository", 2},
           {"download", "repo is required", 2}}) {
    SCOPED_TRACE(c.args);
    const test::CommandResult r = cli(c.args);
    EXPECT_EQ(r.exit_code, c.code) << r.err;
    EXPECT_NE(error_line(r.err).find(c.phrase), std::string::npos) << r.err;
  }
  // A cache that cannot be written: under a regular file (root cannot write there either).
  const test::CommandResult ro =
      test::run_shell("HF_ENDPOINT=" + hub.endpoint() + " TINYLM_CACHE=" + dir.file("file") + " " +
                      TINYLM_CLI_PATH + " download org/tiny");
  EXPECT_EQ(ro.exit_code, 1);
  EXPECT_EQ(count_lines(ro.err), 1) << ro.err;
  EXPECT_NE(ro.err.find(dir.file("file") + "/hub/models--org--tiny: cache directory is not "
                                           "writable"),
            std::string::npos)
      << ro.err;
  // Nothing listens: the URL and curl's words.
  const test::CommandResult down = cli("download org/tiny", "http://127.0.0.1:1");
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_EQ(count_lines(down.err), 1) << down.err;
  EXPECT_NE(down.err.find("http://127.0.0.1:1/api/models/org/tiny/revision/main: "),
            std::string::npos)
      << down.err;
}

TEST_F(HubCli, AGgufRepositoryPlacedInADirectory) {
  hub_test::HubRepo g;
  g.commit = "89abcdef0123456789abcdef0123456789abcdef";
  g.files = {{"tiny-q8_0.gguf",
              test::read_text(test::source_path("tests/fixtures/gguf/tiny_q8_0.gguf")), true}};
  hub.add("org/gguf", g);
  const test::CommandResult r = cli("download org/gguf --out " + dir.file("g"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir.file("g") + "/tiny-q8_0.gguf\n");
  const test::CommandResult gen =
      cli("generate --model " + dir.file("g") + "/tiny-q8_0.gguf --prompt hello --max-tokens 4");
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
}

TEST_F(HubCli, TheTokenComesFromHfToken) {
  hub_test::HubRepo gated = hub_test::tiny_repo();
  gated.token = "secret";
  hub.add("org/gated", gated);
  const test::CommandResult r = test::run_shell("HF_TOKEN=secret HF_ENDPOINT=" + hub.endpoint() +
                                                " TINYLM_CACHE=" + dir.file("cache") + " " +
                                                TINYLM_CLI_PATH + " download org/gated");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_directory(fs::path(r.out.substr(0, r.out.size() - 1))));
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm
