#pragma once
// tokens.bin: the training text tokenized once and memory-mapped by every run that reuses it
// (the format is in docs/formats.md: a 64-byte header with CRCs, JSON metadata
// naming the tokenizer and the sources, then 2- or 4-byte little-endian ids, 64-byte aligned).
// The file is untrusted on open: sizes, padding and all three CRCs are checked first.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/io/mapped_file.h"

namespace tinylm::train {

// Data arguments → the files they name: a file as given; a directory as its regular files,
// recursively, sorted by path (byte order, as Python's sorted() does), skipping every name
// that starts with '.' (a hidden directory is skipped whole). A missing path or a directory
// without files is an Error naming it.
std::vector<std::string> expand_data_paths(std::span<const std::string> args);

// What makes a cache valid: the identity string must change whenever the tokenizer would
// tokenize differently (e.g. it embeds a hash of tokenizer.json).
struct TokenizerIdentity {
  std::string identity;
  int64_t vocab_size = 0;            // every id must be in [0, vocab_size)
  std::optional<int32_t> separator;  // end-of-text id appended after each file, if any
};

// Text (valid UTF-8) → token ids.
using Encoder = std::function<std::vector<int>(std::string_view)>;

struct TokenSource {
  std::string path;  // as given (informational: reuse compares bytes and crc32 only)
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct TokenFileMeta {
  std::string tokenizer;
  int64_t vocab_size = 0;
  std::vector<TokenSource> sources;
  std::optional<int32_t> separator;
};

inline constexpr size_t kTokenHeaderBytes = 64;

// 2 when every id of the vocabulary fits 16 bits, else 4.
int token_width(int64_t vocab_size);

// The whole file for these ids (width token_width(meta.vocab_size)); ids must lie in
// [0, vocab_size). For tests and the fuzz target; the builder streams the same layout.
std::vector<std::byte> encode_token_file(const TokenFileMeta& meta, std::span<const int32_t> ids);

class TokenFile {
 public:
  // Maps and validates the file; any problem is Error("PATH: problem").
  static TokenFile open(const std::string& path);
  // The same checks on bytes in memory (copied); `name` stands for the path in errors.
  static TokenFile from_bytes(std::span<const std::byte> bytes, const std::string& name);

  // Moving keeps file_ and tokens_ valid: they point into the mapping or owned_'s buffer,
  // and both move without relocating.
  TokenFile(TokenFile&&) noexcept = default;
  TokenFile& operator=(TokenFile&&) noexcept = default;

  int64_t size() const { return count_; }  // number of tokens
  int token_bytes() const { return width_; }
  const TokenFileMeta& meta() const { return meta_; }
  const std::string& path() const { return path_; }

  // out[i] = token pos + i for i < n. The range must lie inside the file, and each id is
  // checked against vocab_size here (a compare per copied id) rather than at open, where it
  // would mean a pass over the whole file that the token CRC already vouches for.
  void copy(int64_t pos, int64_t n, int32_t* out) const;

 private:
  TokenFile() = default;
  void parse();  // validates file_ and fills the fields below

  std::string path_;
  io::MappedFile map_;  // open(); empty for from_bytes, which fills owned_
  std::vector<std::byte> owned_;
  std::span<const std::byte> file_, tokens_;
  TokenFileMeta meta_;
  int width_ = 0;
  int64_t count_ = 0;
};

// A training text file, checked: `PATH: empty`, `PATH: invalid UTF-8 at byte N`.
std::string read_text_source(const std::string& path);

struct TokenFileBuild {
  TokenFile file;
  bool reused = false;  // true: the existing cache matched and nothing was tokenized
  // Why an existing file at the path was not reused and was rebuilt (it is damaged, or was
  // made from other data or by another tokenizer); empty when there was none or it was reused.
  std::string rebuilt_because;
};

// Opens the cache at `path` when it is valid and was built by this tokenizer (identity,
// vocab_size, separator) from sources with the same (bytes, crc32), in order; otherwise
// reads each source (non-empty, valid UTF-8), tokenizes it, appends the separator, checks
// every id, writes the cache atomically and opens it. With may_build false (a process that
// only reads the run directory) a cache that does not match is an Error instead.
TokenFileBuild build_or_reuse_token_file(const std::string& path,
                                         std::span<const std::string> sources,
                                         const TokenizerIdentity& identity, const Encoder& encoder,
                                         bool may_build = true);

}  // namespace tinylm::train
