// tinylm's Hub client against a Hub-shaped server on 127.0.0.1 (hub_test_server.h): the cache
// layout it writes, resuming a cut transfer, a wrong sha256 refused, the Hub's errors as one
// line, the token kept to the Hub's own host, an unwritable cache, the Hugging Face cache read.
#include <cstdio>
#include <filesystem>
#include <functional>

#include "hub_test_server.h"
#include "test_util.h"
#include "tinylm/hub/cache.h"
#include "tinylm/hub/download.h"
#include "tinylm/hub/fetch.h"

namespace tinylm::hub {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;
using hub_test::FakeHub;

const std::string kModel = "tests/fixtures/gpt2/tiny/model.safetensors";

struct HubFixture : ::testing::Test {
  FakeHub hub;
  test::TempDir dir;
  HubOptions options;
  Progress quiet{nullptr, false};

  HubFixture() {
    hub.add("org/tiny", hub_test::tiny_repo());
    options.endpoint = hub.endpoint();
    options.cache_root = dir.file("tinylm");
    options.hf_cache_root = dir.file("hf");
    options.retries = 0;
  }
  std::string repo_dir() const { return options.cache_root + "/models--org--tiny"; }
  Snapshot download(const std::string& spec = "org/tiny", const std::string& include = "") {
    return download_model(options, parse_repo_spec(spec), include, quiet);
  }
  std::vector<std::string> requests(const std::string& containing) {
    std::vector<std::string> out;
    for (const hub_test::Seen& s : hub.seen())
      if (s.path.find(containing) != std::string::npos) out.push_back(s.method + " " + s.path);
    return out;
  }
};

std::string model_sha() { return hub_test::sha256_of(test::read_text(test::source_path(kModel))); }

TEST_F(HubFixture, DownloadsIntoTheHubCacheLayout) {
  const Snapshot s = download();
  const std::string commit = hub_test::tiny_repo().commit;
  EXPECT_EQ(s.commit, commit);
  EXPECT_EQ(s.dir, repo_dir() + "/snapshots/" + commit);
  EXPECT_EQ(s.model, s.dir);
  EXPECT_EQ(s.files, (std::vector<std::string>{"config.json", "model.safetensors", "vocab.json",
                                               "merges.txt"}));
  // An LFS file is named by its sha256, a small one by its blob id; the snapshot links to them.
  EXPECT_EQ(fs::read_symlink(fs::path(s.dir) / "model.safetensors"), "../../blobs/" + model_sha());
  const std::string config =
      test::read_text(test::source_path("tests/fixtures/gpt2/tiny/config.json"));
  EXPECT_EQ(fs::read_symlink(fs::path(s.dir) / "config.json"),
            "../../blobs/" + hub_test::blob_id_of(config));
  EXPECT_EQ(test::read_text(s.dir + "/model.safetensors"),
            test::read_text(test::source_path(kModel)));
  EXPECT_EQ(test::read_text(s.dir + "/config.json"), config);
  EXPECT_EQ(test::read_text(repo_dir() + "/refs/main"), commit);
  // Nothing else was fetched: not the README, not the PyTorch or ONNX weights.
  EXPECT_TRUE(requests("pytorch_model").empty());
  EXPECT_TRUE(requests("onnx").empty());
  EXPECT_TRUE(requests("README").empty());
  EXPECT_FALSE(fs::exists(fs::path(s.dir) / "pytorch_model.bin"));
  EXPECT_EQ(requests("/cdn/").size(), 1u);  // the LFS content, once

  const Snapshot again = download();  // everything cached: no content transferred again
  EXPECT_EQ(again.dir, s.dir);
  EXPECT_EQ(requests("/cdn/").size(), 1u);
  EXPECT_EQ(cached_model(options, parse_repo_spec("org/tiny")), s.dir);
  EXPECT_EQ(cached_model(options, parse_repo_spec("org/tiny@" + commit)), s.dir);
  EXPECT_FALSE(cached_model(options, parse_repo_spec("org/tiny@v2")));
}

TEST_F(HubFixture, ResumesACutTransferOnTheNextCall) {
  hub.cut_next_after = 100000;
  test::expect_error([&] { download(); },
                     {"/cdn/" + model_sha(), "model.safetensors", "run again to resume"});
  const std::string partial = repo_dir() + "/blobs/" + model_sha() + ".incomplete";
  ASSERT_TRUE(fs::exists(partial));
  EXPECT_EQ(fs::file_size(partial), 100000u);
  EXPECT_FALSE(fs::exists(repo_dir() + "/snapshots"));  // no snapshot until every file is in

  const Snapshot s = download();
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_EQ(hub_test::sha256_of(test::read_text(s.dir + "/model.safetensors")), model_sha());
  std::vector<std::string> ranges;
  for (const hub_test::Seen& seen : hub.seen())
    if (seen.path.find("/cdn/") != std::string::npos) ranges.push_back(seen.range);
  EXPECT_EQ(ranges, (std::vector<std::string>{"", "bytes=100000-"}));
}

TEST_F(HubFixture, ResumesWithinOneCall) {
  options.retries = 2;
  hub.cut_next_after = 300000;
  const Snapshot s = download();
  EXPECT_EQ(test::read_text(s.dir + "/model.safetensors"),
            test::read_text(test::source_path(kModel)));
  EXPECT_EQ(requests("/cdn/").size(), 2u);
}

TEST_F(HubFixture, AWrongChecksumIsRefusedAndLeavesNothing) {
  hub.corrupt = true;
  const std::string want = model_sha();
  test::expect_error([&] { download(); },
                     {"model.safetensors", "sha256 mismatch", "expected " + want, "got "});
  EXPECT_FALSE(fs::exists(repo_dir() + "/blobs/" + want));
  EXPECT_FALSE(fs::exists(repo_dir() + "/blobs/" + want + ".incomplete"));
  EXPECT_FALSE(fs::exists(repo_dir() + "/snapshots"));
  EXPECT_FALSE(fs::exists(repo_dir() + "/refs"));
  EXPECT_FALSE(cached_model(options, parse_repo_spec("org/tiny")));
}

TEST_F(HubFixture, TheHubsErrorsAreOneLine) {
  test::expect_error([&] { download("org/none"); }, {"org/none", "RepoNotFound"});
  test::expect_error([&] { download("org/tiny@v9"); }, {"org/tiny@v9", "RevisionNotFound"});
  RepoFile missing;
  missing.path = "nothing.bin";
  test::expect_error(
      [&] {
        fetch_file(options, parse_repo_spec("org/tiny"), hub_test::tiny_repo().commit, missing,
                   repo_dir(), quiet);
      },
      {"org/tiny@main", "nothing.bin", "EntryNotFound"});
  HubOptions nowhere = options;
  nowhere.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  test::expect_error([&] { download_model(nowhere, parse_repo_spec("org/tiny"), "", quiet); },
                     {"http://127.0.0.1:1/api/models/org/tiny/revision/main", "onnect"});
}

TEST_F(HubFixture, AGatedRepositoryNeedsItsTokenWhichStaysOnTheHubsHost) {
  hub_test::HubRepo gated = hub_test::tiny_repo();
  gated.token = "secret";
  hub.add("org/gated", gated);
  test::expect_error([&] { download("org/gated"); },
                     {"org/gated", "access denied (gated or private repository; set HF_TOKEN)"});
  options.token = "secret";
  const size_t before = hub.seen().size();
  const Snapshot s = download("org/gated");
  EXPECT_TRUE(fs::exists(s.dir + "/model.safetensors"));
  bool saw_cdn = false;
  const std::vector<hub_test::Seen> seen_all = hub.seen();
  for (size_t i = before; i < seen_all.size(); ++i) {
    const hub_test::Seen& seen = seen_all[i];
    if (seen.path.find("/cdn/") != std::string::npos) {  // the content host: no token
      saw_cdn = true;
      EXPECT_EQ(seen.host.rfind("localhost:", 0), 0u) << seen.host;
      EXPECT_EQ(seen.authorization, "") << seen.path;
    } else if (seen.path.find("/org/gated/") != std::string::npos) {
      EXPECT_EQ(seen.authorization, "Bearer secret") << seen.path;
    }
  }
  EXPECT_TRUE(saw_cdn);
}

TEST_F(HubFixture, AnUnwritableCacheNamesItsDirectory) {
  test::write_text(dir.file("plain"), "x");  // under a file: fails for root too
  options.cache_root = dir.file("plain") + "/hub";
  test::expect_error([&] { download(); },
                     {options.cache_root + "/models--org--tiny", "not writable"});
  EXPECT_TRUE(hub.seen().empty());  // refused before any request
}

TEST_F(HubFixture, AReadOnlyCacheDirectory) {
  if (geteuid() == 0)
    GTEST_SKIP() << "root writes through chmod 0555 (the case under a file is "
                    "AnUnwritableCacheNamesItsDirectory)";
  fs::create_directories(options.cache_root);
  fs::permissions(options.cache_root, fs::perms::owner_read | fs::perms::owner_exec);
  test::expect_error([&] { download(); }, {options.cache_root, "not writable"});
  fs::permissions(options.cache_root, fs::perms::owner_all);
}

TEST_F(HubFixture, FindsASnapshotInTheHuggingFaceCache) {
  HubOptions python = options;  // a model huggingface_hub fetched into its own cache
  python.cache_root = options.hf_cache_root;
  const Snapshot theirs = download_model(python, parse_repo_spec("org/tiny"), "", quiet);
  options.endpoint = "http://127.0.0.1:1";  // no network needed
  EXPECT_EQ(cached_model(options, parse_repo_spec("org/tiny")), theirs.dir);
}

TEST_F(HubFixture, PlacesTheModelInADirectory) {
  const Snapshot s = download();
  const std::string out = dir.file("out");
  place_model(s, out);
  for (const std::string& name : s.files) {
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out + "/" + name))) << name;
    EXPECT_EQ(test::read_text(out + "/" + name), test::read_text(s.dir + "/" + name));
  }
  place_model(s, out);  // again: the directory is replaced
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()),
            static_cast<std::ptrdiff_t>(s.files.size()));
}

TEST_F(HubFixture, AGgufRepositoryWithSeveralFiles) {
  hub_test::HubRepo g;
  g.commit = "89abcdef0123456789abcdef0123456789abcdef";
  const std::string q8 = test::read_text(test::source_path("tests/fixtures/gguf/tiny_q8_0.gguf"));
  g.files = {{"tiny-q8_0.gguf", q8, true},
             {"tiny-q4_0.gguf",
              test::read_text(test::source_path("tests/fixtures/gguf/tiny_q4_0.gguf")), true}};
  hub.add("org/gguf", g);
  test::expect_error([&] { download("org/gguf"); },
                     {"tiny-q8_0.gguf", "tiny-q4_0.gguf", "--include"});
  const Snapshot s = download("org/gguf", "*q8_0*");
  EXPECT_EQ(s.model, s.dir + "/tiny-q8_0.gguf");
  EXPECT_EQ(test::read_text(s.model), q8);
  EXPECT_TRUE(requests("q4_0").empty());
}

TEST_F(HubFixture, ReadsEveryPageOfTheListing) {
  hub.page_size = 2;  // 7 files: 4 pages
  const Snapshot s = download();
  EXPECT_EQ(s.files, (std::vector<std::string>{"config.json", "model.safetensors", "vocab.json",
                                               "merges.txt"}));
  EXPECT_EQ(requests("/tree/").size(), 4u);
}

TEST(HubClient, NextPageOfALinkHeader) {
  const std::string base = "https://hub.example/api/models/o/n/tree/abc";
  EXPECT_EQ(
      next_page(R"(<https://hub.example/api/models/o/n/tree/abc?cursor=xyz>; rel="next")", base),
      "https://hub.example/api/models/o/n/tree/abc?cursor=xyz");
  EXPECT_EQ(next_page(R"(</p?c=1>; rel="prev", </p?c=3>; rel="next")", base),
            "https://hub.example/p?c=3");
  EXPECT_EQ(next_page(R"(</p?c=1>; rel="prev")", base), "");
  EXPECT_EQ(next_page("", base), "");
}

TEST_F(HubFixture, OfflineUsesTheCachesOnly) {
  options.offline = true;  // HF_HUB_OFFLINE
  test::expect_error([&] { download(); }, {"org/tiny@main", "HF_HUB_OFFLINE"});
  EXPECT_TRUE(hub.seen().empty());
}

// What the progress writer prints, through a temporary file.
std::string printed(const std::function<void(Progress&)>& use) {
  std::FILE* f = std::tmpfile();
  Progress p(f, false);
  use(p);
  std::rewind(f);
  std::string out(4096, '\0');
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fclose(f);
  return out;
}

TEST(HubProgress, SummaryLines) {
  EXPECT_EQ(bytes_text(298), "298 B");
  EXPECT_EQ(bytes_text(708000), "708.0 KB");
  EXPECT_EQ(bytes_text(548105171), "548.1 MB");
  const std::string done = printed([](Progress& p) {
    p.start("model.safetensors", 708000, 100000);
    p.advance(608000);
    p.finish();
  });
  EXPECT_EQ(done.rfind("model.safetensors: 708.0 KB, 100%, ", 0), 0u) << done;
  EXPECT_NE(done.find("/s, resumed at 100.0 KB\n"), std::string::npos) << done;
  EXPECT_EQ(printed([](Progress& p) { p.cached("config.json", 298); }),
            "config.json: 298 B, cached\n");
  EXPECT_EQ(printed([](Progress& p) {  // not on a terminal: no line until the summary
              p.start("a", 10, 0);
              p.advance(5);
              p.interrupt();
            }),
            "");
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::hub
