#include "tinylm/hub/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "tinylm/core/error.h"

namespace tinylm::hub {

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  ctx_->md = EVP_MD_CTX_new();
  check(ctx_->md != nullptr && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1,
        "sha256: cannot start a digest (out of memory?)");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::update(std::span<const char> bytes) {
  check(EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()) == 1, "sha256: update failed");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  check(EVP_DigestFinal_ex(ctx_->md, digest, &n) == 1, "sha256: final failed");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path, ": cannot read: ", std::strerror(errno));
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(std::span<const char>(buf.data(), static_cast<size_t>(in.gcount())));
  }
  check(in.eof(), path, ": read failed");
  return h.hex();
}

}  // namespace tinylm::hub
