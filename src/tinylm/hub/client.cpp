#include "tinylm/hub/client.h"

#include <cctype>
#include <cstdlib>

#include "tinylm/hub/cache.h"
#include "tinylm/io/text_file.h"

namespace tinylm::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t begin = 0;
  while (begin < s.size() && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  return s.substr(begin);
}

std::string token_from_file() {
  std::string path = env("HF_TOKEN_PATH");
  if (path.empty()) {
    const std::string home = env("HF_HOME");
    path = (!home.empty() ? home : user_cache_dir() + "/huggingface") + "/token";
  }
  try {
    return trimmed(io::read_file(path, 1 << 16));
  } catch (const Error&) {
    return "";  // no token file: anonymous, as huggingface_hub
  }
}

bool truthy(const std::string& v) {
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE" || v == "on" || v == "yes" ||
         v == "true";
}

bool valid_part(const std::string& p) {
  if (p.empty() || p.size() > 96 || p.front() == '-' || p.front() == '.' || p.back() == '-' ||
      p.back() == '.' || p.find("--") != std::string::npos || p.find("..") != std::string::npos)
    return false;
  for (const char c : p) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  }
  return true;
}

std::string api_url(const HubOptions& o, const RepoSpec& spec, const char* what,
                    const std::string& revision) {
  return o.endpoint + "/api/models/" + spec.repo + "/" + what + "/" + escape_segment(revision);
}

}  // namespace

HubOptions hub_options_from_env() {
  HubOptions o;
  if (const std::string e = env("HF_ENDPOINT"); !e.empty()) o.endpoint = e;
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  o.token = trimmed(env("HF_TOKEN"));
  if (o.token.empty()) o.token = token_from_file();
  o.offline = truthy(env("HF_HUB_OFFLINE"));
  o.cache_root = tinylm_cache_root();
  o.hf_cache_root = hf_cache_root();
  return o;
}

RepoSpec parse_repo_spec(const std::string& text) {
  RepoSpec s;
  const size_t at = text.find('@');
  s.repo = text.substr(0, at);
  if (at != std::string::npos) s.revision = text.substr(at + 1);
  const size_t slash = s.repo.find('/');
  const bool ok = slash == std::string::npos
                      ? valid_part(s.repo)
                      : valid_part(s.repo.substr(0, slash)) && valid_part(s.repo.substr(slash + 1));
  check(ok, text, ": not a Hub repository (ORG/NAME[@REVISION]: letters, digits, '-', '_', '.')");
  check(!s.revision.empty() && s.revision.find("..") == std::string::npos &&
            s.revision.front() != '/' && s.revision.find('\n') == std::string::npos,
        text, ": empty or unsafe revision after '@'");
  return s;
}

void hub_error(const HttpResponse& r, const RepoSpec& spec, const std::string& path) {
  const std::string code = r.header("x-error-code");
  if (code == "RepoNotFound")  // the Hub says so of a private repository too, with a 401
    fail(spec.repo, ": repository not found (RepoNotFound) at ", r.url,
         r.status == 401 ? "; if it is private, set HF_TOKEN" : "");
  if (code == "RevisionNotFound") fail(spec.text(), ": revision not found (RevisionNotFound)");
  if (code == "EntryNotFound") fail(spec.text(), ": ", path, ": file not found (EntryNotFound)");
  if (r.status == 401 || r.status == 403 || code == "GatedRepo")
    fail(spec.repo, ": access denied (gated or private repository; set HF_TOKEN) (HTTP ", r.status,
         " from ", r.url, ")");
  fail(r.url, ": HTTP ", r.status, code.empty() ? "" : " (" + code + ")");
}

HttpResponse get_ok(const HubOptions& o, const std::string& url, const RepoSpec& spec) {
  HttpRequest q;
  q.url = url;
  q.token = o.token;
  q.token_origin = origin_of(o.endpoint);
  HttpResponse r = http_request(q);
  if (r.status != 200) hub_error(r, spec, "");
  return r;
}

std::string next_page(const std::string& link, const std::string& url) {
  // Link: <URL>; rel="next" (RFC 8288), as the Hub paginates a long tree.
  size_t at = 0;
  while ((at = link.find('<', at)) != std::string::npos) {
    const size_t end = link.find('>', at);
    if (end == std::string::npos) return "";
    const size_t next_entry = link.find(',', end);
    const std::string params = link.substr(
        end + 1, next_entry == std::string::npos ? std::string::npos : next_entry - end - 1);
    if (params.find("rel=\"next\"") != std::string::npos ||
        params.find("rel=next") != std::string::npos)
      return resolve_url(url, link.substr(at + 1, end - at - 1));
    at = end;
  }
  return "";
}

std::string fetch_commit(const HubOptions& o, const RepoSpec& spec) {
  const std::string url = api_url(o, spec, "revision", spec.revision);
  return parse_revision_json(get_ok(o, url, spec).body, url);
}

std::vector<RepoFile> fetch_tree(const HubOptions& o, const RepoSpec& spec,
                                 const std::string& commit) {
  std::vector<RepoFile> files;
  std::string url = api_url(o, spec, "tree", commit);
  for (int page = 0; !url.empty(); ++page) {
    check(page < 10000, url, ": more than 10000 pages of listing");
    const HttpResponse r = get_ok(o, url, spec);
    std::vector<RepoFile> more = parse_tree_json(r.body, url);
    files.insert(files.end(), more.begin(), more.end());
    url = next_page(r.header("link"), url);
    check(url.empty() || origin_of(url) == origin_of(o.endpoint), url,
          ": the listing's next page is on another host");
  }
  return files;
}

std::string resolve_url_of(const HubOptions& o, const std::string& repo,
                           const std::string& revision, const std::string& path) {
  std::string url = o.endpoint + "/" + repo + "/resolve/" + escape_segment(revision) + "/";
  size_t begin = 0;
  while (true) {
    const size_t end = path.find('/', begin);
    url += escape_segment(path.substr(begin, end == std::string::npos ? end : end - begin));
    if (end == std::string::npos) return url;
    url += "/";
    begin = end + 1;
  }
}

}  // namespace tinylm::hub
