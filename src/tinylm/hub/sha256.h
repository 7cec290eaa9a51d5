#pragma once
// SHA-256 (OpenSSL's libcrypto), streamed: the Hub names an LFS file by the sha256 of its bytes,
// and a download is checked against it before it enters the cache.
#include <memory>
#include <span>
#include <string>

namespace tinylm::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const char> bytes);
  // The digest in lower-case hex (64 characters); the object is spent afterwards.
  std::string hex();

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

// The sha256 of a file's bytes, in hex; throws Error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace tinylm::hub
