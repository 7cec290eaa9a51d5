// The Hub client's pure parts: SHA-256, the listing JSON (malformed listings included), which
// files make a model, repository specs and the cache layout.
#include <filesystem>

#include "test_util.h"
#include "tinylm/hub/cache.h"
#include "tinylm/hub/client.h"
#include "tinylm/hub/listing.h"
#include "tinylm/hub/sha256.h"

namespace tinylm::hub {
namespace TINYLM_TEST_LOCAL {

namespace fs = std::filesystem;

std::string sha_of(const std::string& s) {
  Sha256 h;
  h.update(s);
  return h.hex();
}

TEST(HubSha256, KnownVectors) {  // FIPS 180-2's examples
  EXPECT_EQ(sha_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 split;  // the same bytes in two pieces
  split.update(std::string("ab"));
  split.update(std::string("c"));
  EXPECT_EQ(split.hex(), sha_of("abc"));
  test::TempDir dir;
  test::write_text(dir.file("f"), "abc");
  EXPECT_EQ(sha256_file(dir.file("f")), sha_of("abc"));
  test::expect_error([&] { sha256_file(dir.file("missing")); }, {dir.file("missing")});
}

RepoFile file(const std::string& path, bool lfs = false) {
  RepoFile f;
  f.path = path;
  f.size = 10;
  f.oid = std::string(40, 'a');
  if (lfs) f.lfs_sha256 = std::string(64, 'b');
  return f;
}

std::vector<std::string> paths(const std::vector<RepoFile>& files) {
  std::vector<std::string> out;
  for (const RepoFile& f : files) out.push_back(f.path);
  return out;
}

TEST(HubListing, ParsesTheTreeSkippingDirectories) {
  const std::string sha(64, 'c');
  const std::vector<RepoFile> files = parse_tree_json(
      R"([{"type":"directory","oid":"x","size":0,"path":"onnx"},
          {"type":"file","oid":"1111111111111111111111111111111111111111","size":298,"path":"config.json"},
          {"type":"file","oid":"2222222222222222222222222222222222222222","size":708000,
           "path":"model.safetensors","lfs":{"oid":")" +
          sha + R"(","size":708000,"pointerSize":134}}])",
      "tree");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "config.json");
  EXPECT_EQ(files[0].size, 298u);
  EXPECT_EQ(files[0].lfs_sha256, "");
  EXPECT_EQ(files[1].path, "model.safetensors");
  EXPECT_EQ(files[1].size, 708000u);
  EXPECT_EQ(files[1].lfs_sha256, sha);
  EXPECT_EQ(parse_revision_json(
                R"({"id":"org/x","sha":")" + std::string(40, 'd') + R"(","siblings":[]})", "rev"),
            std::string(40, 'd'));
}

TEST(HubListing, MalformedListingsAreOneLineErrors) {
  const std::string ok_file = R"("type":"file","oid":"1","size":1)";
  const std::vector<std::pair<std::string, std::string>> trees = {
      {"not json", "tree"},
      {"{}", "not a JSON array"},
      {"[1]", "entry 0: not an object"},
      {R"([{"type":"file","oid":"1","size":1}])", "no \"path\""},
      {R"([{"type":"file","oid":"1","path":"a"}])", "no \"size\""},
      {R"([{"type":"file","oid":"1","size":-1,"path":"a"}])", "\"size\" is not a size"},
      {R"([{"type":"file","oid":"1","size":"1","path":"a"}])", "\"size\" is not a size"},
      {R"([{"type":"link","oid":"1","size":1,"path":"a"}])", "neither file nor directory"},
      {"[{" + ok_file + R"(,"path":"../etc/passwd"}])", "unsafe path"},
      {"[{" + ok_file + R"(,"path":"/etc/passwd"}])", "unsafe path"},
      {"[{" + ok_file + R"(,"path":"a//b"}])", "unsafe path"},
      {"[{" + ok_file + R"(,"path":"a","path":"b"}])", "tree"},  // a repeated key
      {"[{" + ok_file + R"(,"path":"a","lfs":{"oid":"zz","size":1}}])", "not a sha256"},
      {"[{" + ok_file + R"(,"path":"a","lfs":{"oid":")" + std::string(64, 'e') + R"(","size":2}}])",
       "size differs"},
      {"[{" + ok_file + R"(,"path":"a","lfs":[]}])", "lfs: not an object"},
  };
  for (const auto& [text, phrase] : trees) {
    SCOPED_TRACE(text);
    const std::string& json = text;  // (clang 14's lambdas cannot capture a structured binding)
    test::expect_error([&] { parse_tree_json(json, "tree"); }, {"tree", phrase});
  }
  const std::vector<std::string> revisions = {"[]", "{}", R"({"sha":1})", R"({"sha":"main"})",
                                              R"({"sha":")" + std::string(40, 'G') + "\"}"};
  for (const std::string& text : revisions) {
    SCOPED_TRACE(text);
    test::expect_error([&] { parse_revision_json(text, "rev"); }, {"rev"});
  }
}

TEST(HubListing, ChoosesTheFilesAModelNeeds) {
  const std::vector<RepoFile> listing = {file(".gitattributes"),
                                         file("README.md"),
                                         file("config.json"),
                                         file("generation_config.json"),
                                         file("tokenizer.json"),
                                         file("vocab.json"),
                                         file("merges.txt"),
                                         file("model.safetensors", true),
                                         file("pytorch_model.bin", true),
                                         file("tf_model.h5", true),
                                         file("flax_model.msgpack", true),
                                         file("onnx/model.onnx", true),
                                         file("rust_model.ot", true)};
  EXPECT_EQ(paths(choose_model_files(listing, "", "org/x")),
            (std::vector<std::string>{"config.json", "generation_config.json", "tokenizer.json",
                                      "vocab.json", "merges.txt", "model.safetensors"}));

  const std::vector<RepoFile> sharded = {file("config.json"), file("model.safetensors.index.json"),
                                         file("model-00001-of-00002.safetensors", true),
                                         file("model-00002-of-00002.safetensors", true),
                                         file("pytorch_model.bin", true)};
  EXPECT_EQ(paths(choose_model_files(sharded, "", "org/x")),
            (std::vector<std::string>{"config.json", "model.safetensors.index.json",
                                      "model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors"}));

  const std::vector<RepoFile> one_gguf = {file("README.md"), file("tiny-q8_0.gguf", true)};
  EXPECT_EQ(paths(choose_model_files(one_gguf, "", "org/g")),
            (std::vector<std::string>{"tiny-q8_0.gguf"}));
}

TEST(HubListing, SeveralGgufsNeedAnInclude) {
  const std::vector<RepoFile> listing = {file("config.json"), file("tiny-f32.gguf", true),
                                         file("tiny-q8_0.gguf", true)};
  test::expect_error([&] { choose_model_files(listing, "", "org/g"); },
                     {"org/g", "2 GGUF files", "tiny-f32.gguf", "tiny-q8_0.gguf", "--include"});
  EXPECT_EQ(paths(choose_model_files(listing, "*q8_0*", "org/g")),
            (std::vector<std::string>{"config.json", "tiny-q8_0.gguf"}));
  test::expect_error([&] { choose_model_files(listing, "*q4_0*", "org/g"); },
                     {"org/g", "matching --include *q4_0*"});
}

TEST(HubListing, NoWeightsTinylmReadsIsAnError) {
  test::expect_error(
      [&] {
        choose_model_files({file("config.json"), file("pytorch_model.bin", true)}, "", "org/pt");
      },
      {"org/pt", "no model.safetensors", "pytorch_model.bin"});
  test::expect_error([&] { choose_model_files({file("model.safetensors", true)}, "", "org/nc"); },
                     {"org/nc", "without a config.json"});
}

TEST(HubRepoSpec, ParsesAndChecks) {
  const RepoSpec a = parse_repo_spec("openai-community/gpt2");
  EXPECT_EQ(a.repo, "openai-community/gpt2");
  EXPECT_EQ(a.revision, "main");
  const RepoSpec b = parse_repo_spec("gpt2@v1.0");
  EXPECT_EQ(b.repo, "gpt2");
  EXPECT_EQ(b.revision, "v1.0");
  for (const std::string bad : {"", "a/b/c", "a//b", "-a/b", "a/b.", "a--b/c", "a/b c", "a/..b"}) {
    SCOPED_TRACE(bad);
    test::expect_error([&] { parse_repo_spec(bad); }, {"not a Hub repository"});
  }
  for (const std::string bad : {"a/b@", "a/b@../x", "a/b@/x"}) {
    SCOPED_TRACE(bad);
    test::expect_error([&] { parse_repo_spec(bad); }, {bad, "revision"});
  }
}

TEST(HubCache, LayoutAndLookup) {
  EXPECT_EQ(repo_folder("org/name"), "models--org--name");
  EXPECT_EQ(repo_folder("gpt2"), "models--gpt2");
  EXPECT_TRUE(is_commit(std::string(40, 'a')));
  EXPECT_FALSE(is_commit("main"));

  test::TempDir root;
  const std::string commit(40, 'f');
  const fs::path repo = root.path() / "models--org--x";
  EXPECT_FALSE(find_snapshot(root.path().string(), "org/x", "main"));
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  test::write_text((repo / "refs/main").string(), commit);  // as huggingface_hub writes it
  EXPECT_FALSE(find_snapshot(root.path().string(), "org/x", "main"));  // no snapshot yet
  test::write_text((repo / "blobs/c1").string(), "{}");
  link_snapshot_file(repo.string(), commit, "config.json", "c1");
  const fs::path snap = repo / "snapshots" / commit;
  EXPECT_EQ(fs::read_symlink(snap / "config.json"), "../../blobs/c1");
  EXPECT_EQ(find_snapshot(root.path().string(), "org/x", "main"), snap.string());
  EXPECT_EQ(find_snapshot(root.path().string(), "org/x", commit), snap.string());

  EXPECT_FALSE(model_in_snapshot(snap.string()));  // a config alone is no model
  link_snapshot_file(repo.string(), commit, "model.safetensors", "w1");
  EXPECT_FALSE(model_in_snapshot(snap.string()));  // its blob is missing: a dangling link
  test::write_text((repo / "blobs/w1").string(), "weights");
  EXPECT_EQ(model_in_snapshot(snap.string()), snap.string());
  link_snapshot_file(repo.string(), commit, "sub/a.gguf", "g1");
  EXPECT_EQ(fs::read_symlink(snap / "sub/a.gguf"), "../../../blobs/g1");
}

TEST(HubCache, ShardedSnapshotNeedsEveryShard) {
  test::TempDir dir;
  test::write_text(dir.file("config.json"), "{}");
  test::write_text(
      dir.file("model.safetensors.index.json"),
      R"({"metadata":{},"weight_map":{"a":"model-1.safetensors","b":"model-2.safetensors"}})");
  test::write_text(dir.file("model-1.safetensors"), "x");
  EXPECT_FALSE(model_in_snapshot(dir.path().string()));
  test::write_text(dir.file("model-2.safetensors"), "x");
  EXPECT_EQ(model_in_snapshot(dir.path().string()), dir.path().string());
}

TEST(HubCache, WriteRefAndUnwritableCache) {
  test::TempDir root;
  write_ref(root.path().string(), "main", std::string(40, 'a'));
  EXPECT_EQ(test::read_text(root.file("refs/main")), std::string(40, 'a'));
  write_ref(root.path().string(), std::string(40, 'b'), std::string(40, 'b'));  // a commit: none
  EXPECT_FALSE(fs::exists(root.path() / "refs" / std::string(40, 'b')));
  // Under a regular file no directory can be made, whoever runs the test (root too).
  test::write_text(root.file("file"), "x");
  const std::string under = root.file("file") + "/cache";
  test::expect_error([&] { make_cache_dir(under); }, {under, "not writable", "TINYLM_CACHE"});
}

}  // namespace TINYLM_TEST_LOCAL
}  // namespace tinylm::hub
