#include "tinylm/hub/cache.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <span>

#include "tinylm/core/error.h"
#include "tinylm/hub/listing.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/temp_name.h"
#include "tinylm/io/text_file.h"

namespace tinylm::hub {

namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

bool regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows the link into blobs/
}

// Every shard model.safetensors.index.json names is in `dir`.
bool shards_present(const fs::path& dir) {
  try {
    const auto index = io::parse_json_strict(
        io::read_file((dir / "model.safetensors.index.json").string()), "index");
    const auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object() || map->empty()) return false;
    for (const auto& [name, file] : map->items()) {
      if (!file.is_string() || !regular(dir / file.get<std::string>())) return false;
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::string user_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return xdg;
  return env_or("HOME", ".") + "/.cache";
}

std::string tinylm_cache_root() {
  return env_or("TINYLM_CACHE", user_cache_dir() + "/tinylm") + "/hub";
}

std::string hf_cache_root() {
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) return v;
  return env_or("HF_HOME", user_cache_dir() + "/huggingface") + "/hub";
}

std::string repo_folder(const std::string& repo) {
  std::string out = "models--";
  for (const char c : repo) out += c == '/' ? std::string("--") : std::string(1, c);
  return out;
}

bool is_commit(const std::string& revision) { return is_lower_hex(revision, 40); }

std::optional<std::string> find_snapshot(const std::string& root, const std::string& repo,
                                         const std::string& revision) {
  const fs::path repo_dir = fs::path(root) / repo_folder(repo);
  std::string commit = revision;
  if (!is_commit(revision)) {
    const fs::path ref = repo_dir / "refs" / revision;
    if (!regular(ref)) return std::nullopt;
    try {
      commit = io::read_file(ref.string());
    } catch (const Error&) {
      return std::nullopt;
    }
    while (!commit.empty() && (commit.back() == '\n' || commit.back() == ' ')) commit.pop_back();
    if (!is_commit(commit)) return std::nullopt;
  }
  const fs::path dir = repo_dir / "snapshots" / commit;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  return dir.string();
}

std::optional<std::string> model_in_snapshot(const std::string& dir) {
  const fs::path d(dir);
  if (regular(d / "config.json") &&
      (regular(d / "model.safetensors") ||
       (regular(d / "model.safetensors.index.json") && shards_present(d))))
    return dir;
  std::vector<fs::path> ggufs;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
    if (e.path().extension() == ".gguf" && regular(e.path())) ggufs.push_back(e.path());
  }
  if (ggufs.size() == 1) return ggufs.front().string();
  return std::nullopt;
}

void make_cache_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && ::access(dir.c_str(), W_OK) != 0) ec = std::error_code(errno, std::generic_category());
  check(!ec, dir, ": cache directory is not writable: ", ec.message(),
        " (set TINYLM_CACHE to a writable directory)");
}

void link_snapshot_file(const std::string& repo_dir, const std::string& commit,
                        const std::string& path, const std::string& etag) {
  const fs::path link = fs::path(repo_dir) / "snapshots" / commit / path;
  make_cache_dir(link.parent_path().string());
  std::string target = "../../";
  for (const char c : path) target += c == '/' ? "../" : "";
  target += "blobs/" + etag;
  const std::string tmp = io::temp_name(link.string() + ".tmp.");
  std::error_code ec;
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail(link.string(), ": cannot link into the cache: ", ec.message());
  }
}

void write_ref(const std::string& repo_dir, const std::string& revision,
               const std::string& commit) {
  if (is_commit(revision)) return;
  const fs::path ref = fs::path(repo_dir) / "refs" / revision;
  make_cache_dir(ref.parent_path().string());
  io::write_file_atomic(ref.string(), std::as_bytes(std::span(commit.data(), commit.size())));
}

}  // namespace tinylm::hub
