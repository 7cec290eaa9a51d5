#pragma once
// The Hub's own cache layout, which huggingface_hub reads and writes too:
//   ROOT/models--{org}--{name}/blobs/<etag>                    the files' bytes
//                              snapshots/<commit>/<path>      -> ../../blobs/<etag>
//                              refs/<revision>                the commit a branch or tag named
// tinylm writes under its own ROOT ($TINYLM_CACHE/hub, default ~/.cache/tinylm/hub) and also
// finds complete snapshots in the Hugging Face cache (HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub).
#include <optional>
#include <string>

namespace tinylm::hub {

// $XDG_CACHE_HOME, else ~/.cache.
std::string user_cache_dir();

// $TINYLM_CACHE/hub, else ~/.cache/tinylm/hub.
std::string tinylm_cache_root();
// HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::string hf_cache_root();

// "models--org--name" for "org/name".
std::string repo_folder(const std::string& repo);

// A revision that is a commit id (40 lower-case hex digits).
bool is_commit(const std::string& revision);

// The snapshot directory for `revision` under `root` (through refs/<revision> unless it is a
// commit), when it exists; nothing is fetched.
std::optional<std::string> find_snapshot(const std::string& root, const std::string& repo,
                                         const std::string& revision);

// What to load from a snapshot directory: the directory itself when it holds config.json and
// safetensors weights (model.safetensors, or the index with every shard it names present), else
// its one .gguf file; nullopt when it holds no complete model (or several GGUFs). A link into
// blobs/ that points nowhere counts as missing.
std::optional<std::string> model_in_snapshot(const std::string& dir);

// Creates `dir` and its parents; throws Error naming the directory when it cannot ("... is not
// writable: Read-only file system; set TINYLM_CACHE").
void make_cache_dir(const std::string& dir);

// snapshots/<commit>/<path> -> ../../blobs/<etag> (with as many ../ as path has directories),
// replacing what was there atomically (a new link renamed over it).
void link_snapshot_file(const std::string& repo_dir, const std::string& commit,
                        const std::string& path, const std::string& etag);

// refs/<revision> = commit, written atomically; nothing for a revision that is a commit.
void write_ref(const std::string& repo_dir, const std::string& revision, const std::string& commit);

}  // namespace tinylm::hub
