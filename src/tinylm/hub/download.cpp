#include "tinylm/hub/download.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "tinylm/hub/cache.h"
#include "tinylm/hub/fetch.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/staged_dir.h"

namespace tinylm::hub {

namespace fs = std::filesystem;

Snapshot download_model(const HubOptions& o, const RepoSpec& spec, const std::string& include,
                        Progress& progress) {
  check(!o.offline, spec.text(), ": not in the cache (", o.cache_root,
        ") and HF_HUB_OFFLINE is set");
  const std::string repo_dir = o.cache_root + "/" + repo_folder(spec.repo);
  make_cache_dir(repo_dir);  // before any network use: an unwritable cache is the first error
  Snapshot s;
  s.commit = fetch_commit(o, spec);
  const std::vector<RepoFile> files =
      choose_model_files(fetch_tree(o, spec, s.commit), include, spec.text());
  std::vector<std::string> etags;
  for (const RepoFile& f : files)
    etags.push_back(fetch_file(o, spec, s.commit, f, repo_dir, progress));
  for (size_t i = 0; i < files.size(); ++i) {
    link_snapshot_file(repo_dir, s.commit, files[i].path, etags[i]);
    s.files.push_back(files[i].path);
  }
  write_ref(repo_dir, spec.revision, s.commit);
  s.dir = repo_dir + "/snapshots/" + s.commit;
  io::fsync_path(s.dir);
  const std::optional<std::string> model = model_in_snapshot(s.dir);
  check(model.has_value(), s.dir, ": the downloaded files do not make a model tinylm loads");
  s.model = *model;
  return s;
}

std::optional<std::string> cached_model(const HubOptions& o, const RepoSpec& spec) {
  for (const std::string& root : {o.cache_root, o.hf_cache_root}) {
    if (const auto dir = find_snapshot(root, spec.repo, spec.revision)) {
      if (auto model = model_in_snapshot(*dir)) return model;
    }
  }
  return std::nullopt;
}

std::string resolve_hf_model(const std::string& spec_text) {
  const RepoSpec spec = parse_repo_spec(spec_text);
  const HubOptions o = hub_options_from_env();
  if (auto model = cached_model(o, spec)) return *model;
  std::fprintf(stderr, "%s: downloading from %s into %s\n", spec.text().c_str(), o.endpoint.c_str(),
               o.cache_root.c_str());
  Progress progress(stderr, isatty(STDERR_FILENO) != 0);
  return download_model(o, spec, "", progress).model;
}

void place_model(const Snapshot& snapshot, const std::string& out_dir) {
  io::StagedDir out(out_dir, snapshot.files);
  for (const std::string& name : snapshot.files) {
    const fs::path from = fs::canonical(fs::path(snapshot.dir) / name);  // the blob
    const fs::path to = out.file(name);
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    fs::create_hard_link(from, to, ec);
    if (ec) io::copy_file_atomic(from.string(), to.string());  // another filesystem
  }
  out.commit();
}

}  // namespace tinylm::hub
