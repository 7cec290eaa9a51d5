#pragma once
// A model from the Hugging Face Hub: the files it needs (listing.h) fetched into the cache
// (fetch.h) and linked into a snapshot (cache.h), or found already there; the only network use
// in tinylm, and only when a user asks for a model (tinylm download, --model hf:REPO).
#include <optional>
#include <string>
#include <vector>

#include "tinylm/hub/client.h"
#include "tinylm/hub/progress.h"

namespace tinylm::hub {

struct Snapshot {
  std::string dir;  // ROOT/models--org--name/snapshots/<commit>
  std::string commit;
  std::vector<std::string> files;  // paths inside dir
  std::string model;               // what to load: dir, or its .gguf file
};

// Asks the Hub which commit spec.revision is and what it holds, fetches the model's files that
// are not in o.cache_root yet, links them into the snapshot and records refs/<revision>. The
// snapshot is linked only once every file is in and checked. Throws a one-line Error.
Snapshot download_model(const HubOptions& o, const RepoSpec& spec, const std::string& include,
                        Progress& progress);

// The model of a complete snapshot of `spec` already cached (tinylm's cache, then the Hugging
// Face one): no network.
std::optional<std::string> cached_model(const HubOptions& o, const RepoSpec& spec);

// What `--model hf:REPO[@REV]` loads: the cached model, else the one download_model fetches
// (its progress on stderr). `spec_text` is what follows "hf:".
std::string resolve_hf_model(const std::string& spec_text);

// The snapshot's files placed in `out_dir` (hard links into the cache, copies where links
// cannot be made), the directory replaced as a whole (io/staged_dir.h).
void place_model(const Snapshot& snapshot, const std::string& out_dir);

}  // namespace tinylm::hub
