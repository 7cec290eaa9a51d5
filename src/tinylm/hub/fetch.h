#pragma once
// One file of a repository into the cache's blobs/, as huggingface_hub fetches it: a HEAD on its
// resolve URL (not following the redirect) gives its ETag — the git blob id of a small file, the
// sha256 of an LFS one (X-Linked-Etag on the 302) — and the bytes go to blobs/<etag>.incomplete,
// resumed with Range from that file's size, and are renamed to blobs/<etag> once checked (an LFS
// file's sha256, a small file's size).
#include <string>

#include "tinylm/hub/client.h"
#include "tinylm/hub/progress.h"

namespace tinylm::hub {

// Fetches `file` (of `spec.repo` at `commit`) into repo_dir/blobs/ unless it is there; returns
// its ETag (the blob's name). A cut transfer is resumed up to o.retries times; when that fails
// the .incomplete file stays for the next call to resume. A wrong sha256 removes it and throws
// "PATH: sha256 mismatch: expected X, got Y".
std::string fetch_file(const HubOptions& o, const RepoSpec& spec, const std::string& commit,
                       const RepoFile& file, const std::string& repo_dir, Progress& progress);

}  // namespace tinylm::hub
