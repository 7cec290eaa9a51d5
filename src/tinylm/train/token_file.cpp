#include "tinylm/train/token_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/little_endian.h"
#include "tinylm/io/text_file.h"

namespace tinylm::train {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr char kMagic[8] = {'T', 'L', 'M', 'T', 'O', 'K', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr int64_t kMaxVocab = int64_t{1} << 31;  // ids are int32

void put_u64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}
uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint32_t crc_of(std::string_view s) {
  return io::crc32({reinterpret_cast<const std::byte*>(s.data()), s.size()});
}
size_t round_up_64(size_t n) { return (n + 63) / 64 * 64; }

std::string meta_json(const TokenFileMeta& m) {
  Json sources = Json::array();
  for (const TokenSource& s : m.sources)
    sources.push_back(Json{{"path", s.path}, {"bytes", s.bytes}, {"crc32", s.crc32}});
  Json j = Json::object();
  j["tokenizer"] = m.tokenizer;
  j["vocab_size"] = m.vocab_size;
  j["sources"] = std::move(sources);
  j["separator"] = m.separator ? Json(*m.separator) : Json(nullptr);
  // Paths need not be UTF-8 on Linux; they are informational, so replace what is not.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Header, metadata and padding: everything before the token data.
std::vector<std::byte> encode_head(const TokenFileMeta& m, uint64_t count, int width,
                                   uint32_t token_crc) {
  const std::string meta = meta_json(m);
  std::vector<std::byte> out(round_up_64(kTokenHeaderBytes + meta.size()));
  std::byte* p = out.data();
  std::memcpy(p, kMagic, 8);
  io::put_u32(p + 8, kVersion);
  io::put_u32(p + 12, static_cast<uint32_t>(width));
  put_u64(p + 16, count);
  put_u64(p + 24, meta.size());
  io::put_u32(p + 32, token_crc);
  io::put_u32(p + 36, crc_of(meta));
  io::put_u32(p + 60, io::crc32(std::span<const std::byte>(p, 60)));
  std::memcpy(p + kTokenHeaderBytes, meta.data(), meta.size());
  return out;
}

void append_id(std::vector<std::byte>& out, uint32_t id, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<std::byte>((id >> (8 * i)) & 0xffu));
}

const Json& field(const Json& j, const char* key, const std::string& where) {
  check(j.contains(key), where, ": missing field '", key, "'");
  return j.at(key);
}

void only_fields(const Json& j, std::initializer_list<std::string_view> keys,
                 const std::string& where) {
  for (const auto& [k, v] : j.items())
    check(std::find(keys.begin(), keys.end(), k) != keys.end(), where, ": unexpected field '", k,
          "'");
}

uint64_t unsigned_field(const Json& j, const char* key, uint64_t max, const std::string& where) {
  const Json& v = field(j, key, where);
  check(v.is_number_unsigned() && v.get<uint64_t>() <= max, where, ": field '", key,
        "' must be an integer in [0, ", max, "]");
  return v.get<uint64_t>();
}

TokenFileMeta parse_meta(std::string_view text, const std::string& p) {
  const std::string where = p + ": metadata";
  const Json j = io::parse_json_strict(text, where);
  check(j.is_object(), where, ": not a JSON object");
  only_fields(j, {"tokenizer", "vocab_size", "sources", "separator"}, where);
  TokenFileMeta m;
  const Json& tok = field(j, "tokenizer", where);
  check(tok.is_string(), where, ": field 'tokenizer' must be a string");
  m.tokenizer = tok.get<std::string>();
  m.vocab_size = static_cast<int64_t>(unsigned_field(j, "vocab_size", kMaxVocab, where));
  check(m.vocab_size >= 1, where, ": vocab_size must be at least 1");
  const Json& sources = field(j, "sources", where);
  check(sources.is_array(), where, ": field 'sources' must be an array");
  for (const Json& s : sources) {
    check(s.is_object(), where, ": each source must be an object");
    only_fields(s, {"path", "bytes", "crc32"}, where + ": source");
    const Json& path = field(s, "path", where + ": source");
    check(path.is_string(), where, ": source field 'path' must be a string");
    m.sources.push_back({path.get<std::string>(),
                         unsigned_field(s, "bytes", std::numeric_limits<uint64_t>::max(), where),
                         static_cast<uint32_t>(unsigned_field(s, "crc32", 0xffffffffu, where))});
  }
  const Json& sep = field(j, "separator", where);
  if (!sep.is_null()) {
    const uint64_t id = unsigned_field(j, "separator", kMaxVocab, where);
    check(id < static_cast<uint64_t>(m.vocab_size), where, ": separator ", id,
          " is outside the vocabulary of ", m.vocab_size);
    m.separator = static_cast<int32_t>(id);
  }
  return m;
}

void check_identity(const TokenizerIdentity& t, const std::string& where) {
  check(t.vocab_size >= 1 && t.vocab_size <= kMaxVocab, where, ": vocab_size ", t.vocab_size,
        " is outside [1, 2^31]");
  check(!t.separator || (*t.separator >= 0 && *t.separator < t.vocab_size), where,
        ": separator id ", t.separator.value_or(0), " is outside [0, ", t.vocab_size, ")");
}

}  // namespace

int token_width(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

std::vector<std::byte> encode_token_file(const TokenFileMeta& meta, std::span<const int32_t> ids) {
  check_identity({meta.tokenizer, meta.vocab_size, meta.separator}, "token file");
  const int width = token_width(meta.vocab_size);
  std::vector<std::byte> tokens;
  tokens.reserve(ids.size() * width);
  for (const int32_t id : ids) {
    check(id >= 0 && id < meta.vocab_size, "token file: id ", id, " is outside [0, ",
          meta.vocab_size, ")");
    append_id(tokens, static_cast<uint32_t>(id), width);
  }
  std::vector<std::byte> out = encode_head(meta, ids.size(), width, io::crc32(tokens));
  out.insert(out.end(), tokens.begin(), tokens.end());
  return out;
}

// ---- TokenFile ----

TokenFile TokenFile::open(const std::string& path) {
  TokenFile f;
  f.path_ = path;
  f.map_ = io::MappedFile::open(path);
  f.file_ = f.map_.bytes();
  f.parse();
  return f;
}

TokenFile TokenFile::from_bytes(std::span<const std::byte> bytes, const std::string& name) {
  TokenFile f;
  f.path_ = name;
  f.owned_.assign(bytes.begin(), bytes.end());
  f.file_ = f.owned_;
  f.parse();
  return f;
}

void TokenFile::parse() {
  const std::string& p = path_;
  const size_t size = file_.size();
  const std::byte* b = file_.data();
  check(size >= kTokenHeaderBytes, p, ": ", size, " bytes, too short for the ", kTokenHeaderBytes,
        "-byte token file header");
  check(std::memcmp(b, kMagic, 8) == 0, p, ": not a token file (magic is not TLMTOK01)");
  const uint32_t version = io::get_u32(b + 8);
  check(version == kVersion, p, ": token file version ", version, " is not supported (expected ",
        kVersion, ")");
  const uint32_t head_crc = io::crc32(file_.first(60));
  check(head_crc == io::get_u32(b + 60), p, ": header CRC mismatch (stored ",
        io::hex32(io::get_u32(b + 60)), ", computed ", io::hex32(head_crc), ")");
  const uint32_t width = io::get_u32(b + 12);
  check(width == 2 || width == 4, p, ": token width ", width, " bytes (expected 2 or 4)");
  check(std::all_of(b + 40, b + 60, [](std::byte x) { return x == std::byte{0}; }), p,
        ": reserved header bytes 40..59 are not zero");
  const uint64_t count = get_u64(b + 16), meta_bytes = get_u64(b + 24);
  check(meta_bytes <= size - kTokenHeaderBytes, p, ": metadata length ", meta_bytes,
        " runs past the end of the file (", size, " bytes)");
  const size_t meta_end = kTokenHeaderBytes + meta_bytes, data_begin = round_up_64(meta_end);
  check(data_begin <= size, p, ": metadata padding runs past the end of the file (", size,
        " bytes)");
  // Compared by division: count * width could overflow for a hostile header.
  const uint64_t data = size - data_begin;
  check(data % width == 0 && count == data / width, p, ": header says ", count, " tokens of ",
        width, " bytes, but the file holds ", data, " bytes of token data");

  const std::span<const std::byte> meta = file_.subspan(kTokenHeaderBytes, meta_bytes);
  const uint32_t meta_crc = io::crc32(meta);
  check(meta_crc == io::get_u32(b + 36), p, ": metadata CRC mismatch (stored ",
        io::hex32(io::get_u32(b + 36)), ", computed ", io::hex32(meta_crc), ")");
  check(std::all_of(b + meta_end, b + data_begin, [](std::byte x) { return x == std::byte{0}; }), p,
        ": metadata padding is not zero");
  tokens_ = file_.subspan(data_begin);
  const uint32_t token_crc = io::crc32(tokens_);
  check(token_crc == io::get_u32(b + 32), p, ": token data CRC mismatch (stored ",
        io::hex32(io::get_u32(b + 32)), ", computed ", io::hex32(token_crc), ")");

  meta_ = parse_meta({reinterpret_cast<const char*>(meta.data()), meta.size()}, p);
  check(width == 4 || meta_.vocab_size <= 65536, p, ": 2-byte ids cannot hold vocab_size ",
        meta_.vocab_size);
  width_ = static_cast<int>(width);
  count_ = static_cast<int64_t>(count);
}

void TokenFile::copy(int64_t pos, int64_t n, int32_t* out) const {
  check(pos >= 0 && n >= 0 && pos <= count_ && n <= count_ - pos, path_, ": ", n,
        " tokens at position ", pos, " are out of range (", count_, " tokens)");
  const std::byte* src = tokens_.data() + static_cast<size_t>(pos) * width_;
  const uint64_t vocab = static_cast<uint64_t>(meta_.vocab_size);
  for (int64_t i = 0; i < n; ++i, src += width_) {
    const uint32_t id = width_ == 2
                            ? (static_cast<uint32_t>(src[0]) | static_cast<uint32_t>(src[1]) << 8)
                            : io::get_u32(src);
    if (id >= vocab)
      fail(path_, ": token ", pos + i, " has id ", id, ", outside the vocabulary of ", vocab);
    out[i] = static_cast<int32_t>(id);
  }
}

// ---- sources and the cache ----

std::vector<std::string> expand_data_paths(std::span<const std::string> args) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    std::error_code ec;
    const fs::file_status st = fs::status(arg, ec);
    check(fs::exists(st), arg, ": ",
          ec && ec != std::errc::no_such_file_or_directory ? ec.message()
                                                           : "no such file or directory");
    if (fs::is_regular_file(st)) {
      out.push_back(arg);
      continue;
    }
    check(fs::is_directory(st), arg, ": not a regular file or a directory");
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(arg, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with('.')) {
        it.disable_recursion_pending();  // a hidden directory is skipped whole
        continue;
      }
      // Its own error code: a dangling symlink is skipped, not a failed listing.
      std::error_code entry_ec;
      if (it->is_regular_file(entry_ec)) found.push_back(it->path().string());
    }
    check(!ec, arg, ": cannot list the directory: ", ec.message());
    check(!found.empty(), arg, ": no data files in the directory");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string read_text_source(const std::string& path) {
  std::string text = io::read_file(path);
  check(!text.empty(), path, ": empty");
  size_t bad = 0;
  check(is_valid_utf8(text, &bad), path, ": invalid UTF-8 at byte ", bad);
  return text;
}

TokenFileBuild build_or_reuse_token_file(const std::string& path,
                                         std::span<const std::string> sources,
                                         const TokenizerIdentity& identity, const Encoder& encoder,
                                         bool may_build) {
  check_identity(identity, path);
  check(!sources.empty(), path, ": no data files to tokenize");

  // Fingerprint the sources (one file in memory at a time) and compare with the cache.
  std::vector<TokenSource> prints;
  for (const std::string& src : sources) {
    const std::string text = io::read_file(src);
    prints.push_back({src, text.size(), crc_of(text)});
  }
  std::string rebuilt_because;
  if (fs::exists(path)) {
    try {
      TokenFile f = TokenFile::open(path);
      const TokenFileMeta& m = f.meta();
      const bool same = m.tokenizer == identity.identity && m.vocab_size == identity.vocab_size &&
                        m.separator == identity.separator &&
                        std::equal(m.sources.begin(), m.sources.end(), prints.begin(), prints.end(),
                                   [](const TokenSource& a, const TokenSource& b) {
                                     return a.bytes == b.bytes && a.crc32 == b.crc32;
                                   });
      if (same) return {std::move(f), true, ""};
      rebuilt_because = "made from other data or by another tokenizer";
    } catch (const Error& e) {
      // A damaged or foreign cache is rebuilt, like a stale one.
      rebuilt_because = e.what();
    }
  }

  check(may_build, path, ": not the token file this run's first process built (",
        rebuilt_because.empty() ? std::string("missing") : rebuilt_because,
        "); every process must see the same run directory");
  // Rebuild. The metadata records each file as read now, so a file edited since the
  // fingerprint pass cannot leave a cache whose fingerprint does not describe its tokens.
  const int width = token_width(identity.vocab_size);
  TokenFileMeta meta{identity.identity, identity.vocab_size, {}, identity.separator};
  std::vector<std::byte> tokens;
  for (const std::string& src : sources) {
    const std::string text = read_text_source(src);
    meta.sources.push_back({src, text.size(), crc_of(text)});
    for (const int id : encoder(text)) {
      check(id >= 0 && id < identity.vocab_size, src, ": the tokenizer produced id ", id,
            ", outside [0, ", identity.vocab_size, ")");
      append_id(tokens, static_cast<uint32_t>(id), width);
    }
    if (identity.separator) append_id(tokens, static_cast<uint32_t>(*identity.separator), width);
  }
  {
    io::AtomicFile out(path);
    out.write(encode_head(meta, tokens.size() / width, width, io::crc32(tokens)));
    out.write(tokens);
    out.commit();
  }
  return {TokenFile::open(path), false, std::move(rebuilt_because)};
}

}  // namespace tinylm::train
