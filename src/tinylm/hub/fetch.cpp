#include "tinylm/hub/fetch.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "tinylm/hub/cache.h"
#include "tinylm/hub/sha256.h"
#include "tinylm/io/atomic_file.h"

namespace tinylm::hub {

namespace fs = std::filesystem;

namespace {

// What the HEAD on the resolve URL said.
struct Located {
  std::string etag;         // the blob's name
  std::string content_url;  // where the bytes are (the 302's Location for an LFS file)
  uint64_t size = 0;
  bool lfs = false;  // etag is the sha256 of the bytes
};

// An ETag without W/ and quotes.
std::string bare_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

bool safe_etag(const std::string& e) {
  if (e.empty() || e.size() > 128) return false;
  for (const char c : e) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

Located locate(const HubOptions& o, const RepoSpec& spec, const std::string& commit,
               const RepoFile& file) {
  HttpRequest q;
  q.url = resolve_url_of(o, spec.repo, commit, file.path);
  q.head = true;
  q.follow_redirects = false;
  q.token = o.token;
  q.token_origin = origin_of(o.endpoint);
  for (int hop = 0; hop < 5; ++hop) {
    const HttpResponse r = http_request(q);
    const std::string linked = r.header("x-linked-etag");
    Located l;
    if (r.status >= 300 && r.status < 400 && !linked.empty()) {  // LFS: 302 to the content
      l.etag = bare_etag(linked);
      l.lfs = true;
      l.content_url = resolve_url(q.url, r.header("location"));
      const std::string size = r.header("x-linked-size");
      l.size = size.empty() ? file.size : std::strtoull(size.c_str(), nullptr, 10);
    } else if (r.status >= 300 && r.status < 400 && !r.header("location").empty()) {
      q.url = resolve_url(q.url, r.header("location"));  // a renamed repository
      continue;
    } else if (r.status == 200) {
      l.etag = bare_etag(r.header("etag"));
      l.content_url = q.url;
      l.size = file.size;
    } else {
      hub_error(r, spec, file.path);
    }
    check(safe_etag(l.etag), q.url, ": no usable ETag in the Hub's answer (got \"",
          l.etag.substr(0, 80), "\")");
    check(!l.lfs || l.etag.size() == 64, q.url, ": X-Linked-Etag is not a sha256: ", l.etag);
    return l;
  }
  fail(q.url, ": too many redirects");
}

uint64_t file_size(const std::string& path) {
  std::error_code ec;
  const uint64_t n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Appends what `url` serves from byte `from` to `partial`; returns when the transfer ends.
// A server that ignores the Range (200) restarts the file.
void transfer(const HubOptions& o, const Located& l, const RepoSpec& spec, const RepoFile& file,
              const std::string& partial, uint64_t from, Progress& progress) {
  std::unique_ptr<std::FILE, FileCloser> out(std::fopen(partial.c_str(), from ? "ab" : "wb"));
  check(out != nullptr, partial, ": cannot write: ", std::strerror(errno));
  HttpRequest q;
  q.url = l.content_url;
  q.range_from = from;
  q.token = o.token;
  q.token_origin = origin_of(o.endpoint);
  q.on_start = [&](const HttpResponse& r) {
    if (from > 0 && r.status == 200) {  // the whole file again: start over
      check(std::freopen(partial.c_str(), "wb", out.get()) != nullptr, partial,
            ": cannot write: ", std::strerror(errno));
      progress.start(file.path, l.size, 0);
    }
  };
  q.sink = [&](std::span<const char> bytes) {
    check(std::fwrite(bytes.data(), 1, bytes.size(), out.get()) == bytes.size(), partial,
          ": write failed: ", std::strerror(errno));
    progress.advance(bytes.size());
  };
  const HttpResponse r = http_request(q);
  check(std::fflush(out.get()) == 0, partial, ": write failed: ", std::strerror(errno));
  if (r.status == 416) {  // nothing past `from`: the partial file is whole (or wrong)
    return;
  }
  if (r.status != 200 && r.status != 206) hub_error(r, spec, file.path);
}

// Fetches the rest of blob.incomplete from `from`, resuming a cut transfer o.retries times, then
// checks it and renames it to `blob`.
void receive(const HubOptions& o, const Located& l, const RepoSpec& spec, const RepoFile& file,
             const std::string& blob, uint64_t from, Progress& progress) {
  const std::string partial = blob + ".incomplete";
  for (int attempt = 0;; ++attempt) {
    try {
      if (from < l.size || l.size == 0) transfer(o, l, spec, file, partial, from, progress);
      break;
    } catch (const TransferError& e) {
      const uint64_t now = file_size(partial);
      if (attempt >= o.retries || now <= from)  // no progress: the next call resumes
        fail(e.what(), " (", file.path, ": ", now, " of ", l.size,
             " bytes kept; run again to resume)");
      from = now;
    }
  }
  const uint64_t got = file_size(partial);
  if (got != l.size) {
    std::remove(partial.c_str());
    fail(file.path, ": got ", got, " bytes, expected ", l.size,
         " (the partial download was removed)");
  }
  if (l.lfs) {
    const std::string actual = sha256_file(partial);
    if (actual != l.etag) {
      std::remove(partial.c_str());
      fail(file.path, ": sha256 mismatch: expected ", l.etag, ", got ", actual,
           " (the download was removed)");
    }
  }
  io::fsync_path(partial);
  std::error_code ec;
  fs::rename(partial, blob, ec);
  check(!ec, blob, ": cannot move into the cache: ", ec.message());
  io::fsync_path(io::parent_dir(blob));
}

}  // namespace

std::string fetch_file(const HubOptions& o, const RepoSpec& spec, const std::string& commit,
                       const RepoFile& file, const std::string& repo_dir, Progress& progress) {
  const Located l = locate(o, spec, commit, file);
  const std::string blobs = repo_dir + "/blobs";
  make_cache_dir(blobs);
  const std::string blob = blobs + "/" + l.etag;
  if (file_size(blob) == l.size && fs::is_regular_file(blob)) {
    progress.cached(file.path, l.size);
    return l.etag;
  }
  const std::string partial = blob + ".incomplete";
  uint64_t from = file_size(partial);
  if (from > l.size) from = 0;
  progress.start(file.path, l.size, from);
  try {
    receive(o, l, spec, file, blob, from, progress);
  } catch (...) {
    progress.interrupt();
    throw;
  }
  progress.finish();
  return l.etag;
}

}  // namespace tinylm::hub
