#pragma once
// A Hugging Face Hub on 127.0.0.1, written to the Hub's documented read API (FORMATS.md, "Hugging
// Face Hub, read side"), not to tinylm's client: GET /api/models/{repo}/revision/{rev} and
// /tree/{rev}; {repo}/resolve/{rev}/{path} answering 200 + ETag for small files and 302 +
// X-Linked-Etag / X-Linked-Size / X-Repo-Commit to a content URL on another host name
// (localhost, as the Hub's CDN is another host) for LFS files; 401 for a gated repository
// without its token; 404 with X-Error-Code. Modes: cut the next content transfer after N bytes;
// serve LFS content with one byte changed. Every request is recorded.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "tinylm/hub/sha256.h"

namespace tinylm::hub_test {

struct HubFile {
  std::string path, bytes;
  bool lfs = false;
};

struct HubRepo {
  std::string commit;  // 40 hex digits; "main" names it
  std::vector<HubFile> files;
  std::string token;  // non-empty: gated, only "Bearer TOKEN" may read it
};

// One request the server saw.
struct Seen {
  std::string method, path, host, authorization, range;
};

inline std::string sha256_of(const std::string& bytes) {
  hub::Sha256 h;
  h.update(bytes);
  return h.hex();
}

// A stand-in git blob id for a small file: 40 hex digits that change with its bytes.
inline std::string blob_id_of(const std::string& bytes) { return sha256_of(bytes).substr(0, 40); }

class FakeHub {
 public:
  FakeHub() {
    using httplib::Request;
    using httplib::Response;
    server_.Get(R"(/api/models/([^/]+/[^/]+)/(revision|tree)/([^/]+))",
                [this](const Request& q, Response& r) { listing(q, r); });
    server_.Get(R"(/([^/]+/[^/]+)/resolve/([^/]+)/(.+))",
                [this](const Request& q, Response& r) { resolve(q, r); });
    server_.Get(R"(/cdn/([0-9a-f]{64}))", [this](const Request& q, Response& r) { content(q, r); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    server_.stop();
    thread_.join();
  }

  void add(const std::string& name, HubRepo repo) {
    std::lock_guard lock(mutex_);
    repos_[name] = std::move(repo);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

  std::atomic<size_t> cut_next_after{0};  // > 0: the next content GET stops after this many bytes
  std::atomic<bool> corrupt{false};       // LFS content served with its first byte changed
  std::atomic<size_t> page_size{0};       // > 0: the tree listing in pages of this many files

 private:
  // The repository a request names, or an answer saying why not (nullptr).
  const HubRepo* repo_for(const httplib::Request& q, httplib::Response& r, const std::string& name,
                          const std::string& revision) {
    record(q);
    std::lock_guard lock(mutex_);
    const auto it = repos_.find(name);
    if (it == repos_.end()) return refuse(r, 404, "RepoNotFound");
    const HubRepo& repo = it->second;
    if (!repo.token.empty() && q.get_header_value("Authorization") != "Bearer " + repo.token)
      return refuse(r, 401, "GatedRepo");
    if (revision != "main" && revision != repo.commit) return refuse(r, 404, "RevisionNotFound");
    return &repo;
  }

  static const HubRepo* refuse(httplib::Response& r, int status, const char* code) {
    r.status = status;
    r.set_header("X-Error-Code", code);
    r.set_content(std::string("{\"error\":\"") + code + "\"}", "application/json");
    return nullptr;
  }

  void record(const httplib::Request& q) {
    std::lock_guard lock(mutex_);
    seen_.push_back({q.method, q.path, q.get_header_value("Host"),
                     q.get_header_value("Authorization"), q.get_header_value("Range")});
  }

  void listing(const httplib::Request& q, httplib::Response& r) {
    const HubRepo* repo = repo_for(q, r, q.matches[1], q.matches[3]);
    if (!repo) return;
    std::string json;
    if (q.matches[2] == "revision") {
      json = "{\"id\":\"" + std::string(q.matches[1]) + "\",\"sha\":\"" + repo->commit +
             "\",\"siblings\":[";
      for (size_t i = 0; i < repo->files.size(); ++i)
        json += std::string(i ? "," : "") + "{\"rfilename\":\"" + repo->files[i].path + "\"}";
      json += "]}";
    } else {
      // One page of page_size entries from ?cursor=N, the next one named by a Link header.
      const size_t first = q.has_param("cursor") ? std::stoul(q.get_param_value("cursor")) : 0;
      const size_t n = page_size ? std::min<size_t>(page_size, repo->files.size() - first)
                                 : repo->files.size() - first;
      if (first + n < repo->files.size())
        r.set_header("Link",
                     "<" + q.path + "?cursor=" + std::to_string(first + n) + ">; rel=\"next\"");
      json = "[";
      for (size_t i = first; i < first + n; ++i) {
        const HubFile& f = repo->files[i];
        const std::string size = std::to_string(f.bytes.size());
        json += std::string(i > first ? "," : "") + "{\"type\":\"file\",\"oid\":\"" +
                blob_id_of(f.bytes) + "\",\"size\":" + size + ",\"path\":\"" + f.path + "\"";
        if (f.lfs)
          json += ",\"lfs\":{\"oid\":\"" + sha256_of(f.bytes) + "\",\"size\":" + size +
                  ",\"pointerSize\":134}";
        json += "}";
      }
      json += ",{\"type\":\"directory\",\"oid\":\"" + std::string(40, '0') +
              "\",\"size\":0,\"path\":\"onnx\"}]";
    }
    r.set_content(json, "application/json");
  }

  void resolve(const httplib::Request& q, httplib::Response& r) {
    const HubRepo* repo = repo_for(q, r, q.matches[1], q.matches[2]);
    if (!repo) return;
    for (const HubFile& f : repo->files) {
      if (f.path != q.matches[3]) continue;
      r.set_header("X-Repo-Commit", repo->commit);
      if (!f.lfs) {
        r.set_header("ETag", "\"" + blob_id_of(f.bytes) + "\"");
        r.set_content(f.bytes, "application/octet-stream");
        return;
      }
      const std::string sha = sha256_of(f.bytes);
      {
        std::lock_guard lock(mutex_);
        blobs_[sha] = f.bytes;
      }
      r.set_header("X-Linked-Etag", "\"" + sha + "\"");
      r.set_header("X-Linked-Size", std::to_string(f.bytes.size()));
      r.set_redirect("http://localhost:" + std::to_string(port_) + "/cdn/" + sha, 302);
      return;
    }
    refuse(r, 404, "EntryNotFound");
  }

  void content(const httplib::Request& q, httplib::Response& r) {
    record(q);
    std::string bytes;
    {
      std::lock_guard lock(mutex_);
      const auto it = blobs_.find(q.matches[1]);
      if (it == blobs_.end()) {
        r.status = 404;
        return;
      }
      bytes = it->second;
    }
    if (corrupt) bytes[0] = static_cast<char>(bytes[0] ^ 1);
    const size_t cut = cut_next_after.exchange(0);
    if (cut == 0) {
      r.set_content(bytes, "application/octet-stream");  // httplib answers a Range with 206
      return;
    }
    // The whole length announced, `cut` bytes sent, then the connection dropped.
    r.set_content_provider(bytes.size(), "application/octet-stream",
                           [bytes, cut](size_t offset, size_t, httplib::DataSink& sink) {
                             if (offset < cut) sink.write(bytes.data() + offset, cut - offset);
                             return false;
                           });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, HubRepo> repos_;
  std::map<std::string, std::string> blobs_;  // sha256 -> bytes, as the CDN serves them
  std::vector<Seen> seen_;
};

// org/tiny as the Hub holds a GPT-2 checkpoint: the tiny fixture's config.json and
// model.safetensors (LFS), its tokenizer's vocab.json and merges.txt, a README and weights in
// formats tinylm does not read (pytorch_model.bin, onnx/model.onnx), which must not be fetched.
inline HubRepo tiny_repo() {
  using tinylm::test::read_text;
  using tinylm::test::source_path;
  HubRepo r;
  r.commit = "0123456789abcdef0123456789abcdef01234567";
  r.files = {
      {"config.json", read_text(source_path("tests/fixtures/gpt2/tiny/config.json")), false},
      {"model.safetensors", read_text(source_path("tests/fixtures/gpt2/tiny/model.safetensors")),
       true},
      {"vocab.json", read_text(source_path("tests/fixtures/gguf/tokenizer/vocab.json")), false},
      {"merges.txt", read_text(source_path("tests/fixtures/gguf/tokenizer/merges.txt")), false},
      {"README.md", "# tiny\n", false},
      {"pytorch_model.bin", std::string(1000, 'p'), true},
      {"onnx/model.onnx", std::string(1000, 'o'), true},
  };
  return r;
}

}  // namespace tinylm::hub_test
