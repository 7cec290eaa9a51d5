#pragma once
// Where the Hub is and who asks (HF_ENDPOINT, HF_TOKEN as huggingface_hub reads them), what a
// repository spec names, and the Hub's answers turned into one-line errors.
#include <string>
#include <vector>

#include "tinylm/hub/http.h"
#include "tinylm/hub/listing.h"

namespace tinylm::hub {

struct HubOptions {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, without a trailing slash
  std::string token;       // HF_TOKEN, else the file `huggingface-cli login` wrote (HF_TOKEN_PATH,
                           // else $HF_HOME/token)
  bool offline = false;    // HF_HUB_OFFLINE: the caches only
  std::string cache_root;  // where tinylm writes (tinylm_cache_root())
  std::string hf_cache_root;  // read too (hf_cache_root())
  int retries = 3;            // resumes of a cut transfer within one call
};

// The options from the environment.
HubOptions hub_options_from_env();

// "org/name[@revision]" (revision default "main").
struct RepoSpec {
  std::string repo;
  std::string revision = "main";
  std::string text() const { return repo + "@" + revision; }
};

// Parses and checks a spec as huggingface_hub checks repository ids (one or two parts of
// letters, digits, '-', '_', '.'; no "--" or ".."); throws Error saying what is wrong.
RepoSpec parse_repo_spec(const std::string& text);

// Throws the one-line error for a Hub answer that is not a success: 401/403 access denied,
// 404 with X-Error-Code RepoNotFound / RevisionNotFound / EntryNotFound, else the status and
// URL. `path`: the file asked for ("" for the listing).
[[noreturn]] void hub_error(const HttpResponse& r, const RepoSpec& spec, const std::string& path);

// A GET of `url` with the token: the response when it is 200, else hub_error.
HttpResponse get_ok(const HubOptions& o, const std::string& url, const RepoSpec& spec);

// The URL of a Link header's rel="next" (resolved against `url`), or "".
std::string next_page(const std::string& link, const std::string& url);

// The commit `spec.revision` names (GET /api/models/{repo}/revision/{rev}).
std::string fetch_commit(const HubOptions& o, const RepoSpec& spec);

// The files at `commit` (GET /api/models/{repo}/tree/{commit}, every page of it).
std::vector<RepoFile> fetch_tree(const HubOptions& o, const RepoSpec& spec,
                                 const std::string& commit);

// {endpoint}/{repo}/resolve/{revision}/{path}, each path segment escaped.
std::string resolve_url_of(const HubOptions& o, const std::string& repo,
                           const std::string& revision, const std::string& path);

}  // namespace tinylm::hub
