#include "tinylm/hub/listing.h"

#include <fnmatch.h>

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/io/json_strict.h"

namespace tinylm::hub {

namespace {

using Json = nlohmann::ordered_json;

const Json& field(const Json& object, const char* name, const std::string& where) {
  const auto it = object.find(name);
  check(it != object.end(), where, ": no \"", name, "\"");
  return *it;
}

std::string string_field(const Json& object, const char* name, const std::string& where) {
  const Json& v = field(object, name, where);
  check(v.is_string(), where, ": \"", name, "\" is not a string");
  return v.get<std::string>();
}

uint64_t size_field(const Json& object, const std::string& where) {
  const Json& v = field(object, "size", where);
  check(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), where,
        ": \"size\" is not a size in bytes");
  return v.get<uint64_t>();
}

// A path inside the repository that is safe to create under a snapshot directory.
bool safe_path(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.find('\0') != std::string::npos) return false;
  size_t begin = 0;
  while (begin <= p.size()) {
    const size_t end = std::min(p.find('/', begin), p.size());
    const std::string part = p.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

bool matches(const std::string& pattern, const std::string& path) {
  return fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string names(const std::vector<const RepoFile*>& files) {
  std::string out;
  for (const RepoFile* f : files) out += (out.empty() ? "" : ", ") + f->path;
  return out;
}

}  // namespace

bool is_lower_hex(const std::string& s, size_t length) {
  return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string parse_revision_json(std::string_view text, const std::string& what) {
  const Json doc = io::parse_json_strict(text, what);
  check(doc.is_object(), what, ": not a JSON object");
  const std::string sha = string_field(doc, "sha", what);
  check(is_lower_hex(sha, 40), what,
        ": \"sha\" is not a commit id (40 hex digits): ", sha.substr(0, 64));
  return sha;
}

std::vector<RepoFile> parse_tree_json(std::string_view text, const std::string& what) {
  const Json doc = io::parse_json_strict(text, what);
  check(doc.is_array(), what, ": not a JSON array of entries");
  std::vector<RepoFile> files;
  for (size_t i = 0; i < doc.size(); ++i) {
    const Json& e = doc[i];
    const std::string where = cat(what, ": entry ", i);
    check(e.is_object(), where, ": not an object");
    const std::string type = string_field(e, "type", where);
    if (type == "directory") continue;
    check(type == "file", where, ": \"type\" is neither file nor directory: ", type);
    RepoFile f;
    f.path = string_field(e, "path", where);
    check(safe_path(f.path), where, ": unsafe path \"", f.path, "\"");
    f.oid = string_field(e, "oid", where);
    f.size = size_field(e, where);
    if (const auto lfs = e.find("lfs"); lfs != e.end() && !lfs->is_null()) {
      const std::string lwhere = where + ": lfs";
      check(lfs->is_object(), lwhere, ": not an object");
      f.lfs_sha256 = string_field(*lfs, "oid", lwhere);
      check(is_lower_hex(f.lfs_sha256, 64), lwhere, ": \"oid\" is not a sha256 (64 hex digits)");
      check(size_field(*lfs, lwhere) == f.size, lwhere, ": size differs from the entry's");
    }
    files.push_back(std::move(f));
  }
  return files;
}

std::vector<RepoFile> choose_model_files(const std::vector<RepoFile>& listing,
                                         const std::string& include, const std::string& repo) {
  static const char* kSide[] = {"config.json",    "generation_config.json",
                                "tokenizer.json", "tokenizer_config.json",
                                "vocab.json",     "merges.txt"};
  std::vector<const RepoFile*> single, index, shards, ggufs;
  for (const RepoFile& f : listing) {
    const bool weights = ends_with(f.path, ".safetensors") || ends_with(f.path, ".gguf");
    if (weights && !include.empty() && !matches(include, f.path)) continue;
    if (f.path == "model.safetensors") single.push_back(&f);
    if (f.path == "model.safetensors.index.json") index.push_back(&f);
    if (matches("model-*-of-*.safetensors", f.path)) shards.push_back(&f);
    if (ends_with(f.path, ".gguf")) ggufs.push_back(&f);
  }
  std::vector<const RepoFile*> weights;
  if (!single.empty()) {
    weights = single;
  } else if (!index.empty() && !shards.empty()) {
    weights = index;
    weights.insert(weights.end(), shards.begin(), shards.end());
  } else if (ggufs.size() == 1) {
    weights = ggufs;
  } else if (ggufs.size() > 1) {
    fail(repo, ": ", ggufs.size(), " GGUF files (", names(ggufs),
         "); choose one with --include PATTERN, e.g. --include '", ggufs.front()->path, "'");
  } else {
    std::vector<const RepoFile*> all;
    for (const RepoFile& f : listing) all.push_back(&f);
    fail(repo, ": no model.safetensors, sharded safetensors or GGUF file",
         include.empty() ? std::string() : " matching --include " + include,
         " (tinylm does not read pytorch_model.bin, TensorFlow, Flax or ONNX weights); files: ",
         all.empty() ? std::string("none") : names(all));
  }
  std::vector<RepoFile> chosen;
  for (const RepoFile& f : listing) {
    const bool side = std::find(std::begin(kSide), std::end(kSide), f.path) != std::end(kSide);
    if (side || std::find(weights.begin(), weights.end(), &f) != weights.end()) chosen.push_back(f);
  }
  const bool gguf = ends_with(weights.front()->path, ".gguf");
  check(gguf || std::any_of(chosen.begin(), chosen.end(),
                            [](const RepoFile& f) { return f.path == "config.json"; }),
        repo, ": safetensors weights without a config.json");
  return chosen;
}

}  // namespace tinylm::hub
