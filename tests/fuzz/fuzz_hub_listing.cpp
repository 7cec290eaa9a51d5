// libFuzzer target: arbitrary bytes as the Hub's listing answers, through
// hub::parse_tree_json and hub::parse_revision_json. Rejection must be a tinylm::Error; a tree
// that parses has only safe relative paths, and the files chosen from it are its own.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_scratch.h"
#include "tinylm/core/error.h"
#include "tinylm/hub/listing.h"

using tinylm::fuzz::require;

namespace {

// A relative path without empty, "." or ".." parts: one that stays inside a snapshot.
bool stays_inside(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find('/', begin), path.size());
    const std::string_view part = std::string_view(path).substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const std::string sha = tinylm::hub::parse_revision_json(text, "revision");
    require(sha.size() == 40);
  } catch (const tinylm::Error&) {
  }
  std::vector<tinylm::hub::RepoFile> files;
  try {
    files = tinylm::hub::parse_tree_json(text, "tree");
  } catch (const tinylm::Error&) {
    return 0;  // a rejected listing: the expected outcome for most inputs
  }
  for (const tinylm::hub::RepoFile& f : files) {
    require(stays_inside(f.path));
    require(f.lfs_sha256.empty() || f.lfs_sha256.size() == 64);
  }
  try {
    for (const tinylm::hub::RepoFile& c : tinylm::hub::choose_model_files(files, "", "org/x"))
      require(std::any_of(files.begin(), files.end(),
                          [&](const tinylm::hub::RepoFile& f) { return f.path == c.path; }));
  } catch (const tinylm::Error&) {
  }
  return 0;
}
