#include "tinylm/checkpoints/evl_checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

#include "tinylm/core/dtype.h"
#include "tinylm/core/enum_names.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/little_endian.h"
#include "tinylm/io/mapped_file.h"
#include "tinylm/kernels/cast/cast.h"

namespace tinylm::checkpoints {

namespace {

constexpr EnumName<EvlPrecision> kPrecisionNames[] = {{EvlPrecision::f32, "f32"},
                                                      {EvlPrecision::f16, "f16"}};

constexpr size_t kChunkValues = 16384;  // parameters converted per write while streaming

size_t value_bytes(EvlPrecision p) { return p == EvlPrecision::f16 ? 2 : 4; }

// The parameter count of a configuration, computed from the fields with overflow checks so
// that a header claiming an absurd model is rejected by arithmetic, before anything is built
// or allocated from it. Mirrors models/evermind/tensors.h's list (decode checks that they agree):
//   emb V·d; per layer conv d·K, two gains d, router E·d, shared up + down 2·H·d,
//   E experts' up + down 2·H·d each.
bool checked_param_count(const evermind::Config& c, uint64_t* out) {
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  uint64_t ffn = 0, experts = 0, per_layer = 0, layers = 0, emb = 0, t = 0;
  bool bad = __builtin_mul_overflow(u(c.hidden_dim), u(c.d_model), &ffn);  // H·d
  bad |= __builtin_mul_overflow(ffn, uint64_t{2}, &ffn);                   // up + down
  bad |= __builtin_add_overflow(u(c.n_experts), uint64_t{1}, &t);          // + shared
  bad |= __builtin_mul_overflow(ffn, t, &experts);
  bad |= __builtin_add_overflow(u(c.conv_kernel), uint64_t{2}, &t);  // conv + gains
  bad |= __builtin_add_overflow(t, u(c.n_experts), &t);              // + router
  bad |= __builtin_mul_overflow(t, u(c.d_model), &per_layer);
  bad |= __builtin_add_overflow(per_layer, experts, &per_layer);
  bad |= __builtin_mul_overflow(per_layer, u(c.n_layers), &layers);
  bad |= __builtin_mul_overflow(u(c.vocab_size), u(c.d_model), &emb);
  bad |= __builtin_add_overflow(emb, layers, out);
  return !bad;
}

// File size for a parameter count; false on overflow.
bool checked_file_bytes(uint64_t count, EvlPrecision p, uint64_t* out) {
  uint64_t data = 0;
  return !__builtin_mul_overflow(count, uint64_t{value_bytes(p)}, &data) &&
         !__builtin_add_overflow(data, uint64_t{kEvlHeaderBytes + kEvlTrailerBytes}, out);
}

std::string config_str(const evermind::Config& c) {
  return cat("vocab_size ", c.vocab_size, ", d_model ", c.d_model, ", n_layers ", c.n_layers,
             ", conv_kernel ", c.conv_kernel, ", hidden_dim ", c.hidden_dim, ", n_experts ",
             c.n_experts, ", top_k ", c.top_k);
}

bool valid_precision(uint32_t v) { return v == 1 || v == 2; }

// Streams the whole checkpoint through emit(span of bytes) and returns the CRC.
template <class Emit>
uint32_t emit_evl(const evermind::Config& config, std::span<const float> params,
                  EvlPrecision precision, std::string_view name, Emit&& emit) {
  check(precision == EvlPrecision::f32 || precision == EvlPrecision::f16, name,
        ": unknown EVL0 precision ", static_cast<uint32_t>(precision));
  std::array<std::byte, kEvlHeaderBytes> header{};
  io::put_u32(header.data(), kEvlMagic);
  io::put_u32(header.data() + 4, static_cast<uint32_t>(precision));
  put_evl_config(header.data() + 8, config, name);  // validates; fields fit the u32s
  const size_t expected = evermind::param_layout(config).size();
  check(params.size() == expected, name, ": ", params.size(),
        " parameters given, a model of this configuration has ", expected);
  uint32_t crc = io::crc32(header);
  emit(std::span<const std::byte>(header));

  const size_t width = value_bytes(precision);
  std::vector<std::byte> buf(kChunkValues * width);
  std::vector<kernels::F16> halves(precision == EvlPrecision::f16 ? kChunkValues : 0);
  for (size_t begin = 0; begin < params.size(); begin += kChunkValues) {
    const size_t n = std::min(kChunkValues, params.size() - begin);
    const std::span<const float> chunk = params.subspan(begin, n);
    if (precision == EvlPrecision::f32) {
      for (size_t i = 0; i < n; ++i) io::put_u32(buf.data() + 4 * i, float_bits(chunk[i]));
    } else {
      kernels::convert(chunk.data(), halves.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        buf[2 * i] = static_cast<std::byte>(halves[i].bits & 0xffu);
        buf[2 * i + 1] = static_cast<std::byte>(halves[i].bits >> 8);
      }
    }
    const std::span<const std::byte> bytes(buf.data(), n * width);
    crc = io::crc32(bytes, crc);
    emit(bytes);
  }
  std::array<std::byte, kEvlTrailerBytes> trailer{};
  io::put_u32(trailer.data(), kEvlCrcTag);
  crc = io::crc32(std::span<const std::byte>(trailer).first(4), crc);
  io::put_u32(trailer.data() + 4, crc);
  emit(std::span<const std::byte>(trailer));
  return crc;
}

// Checks the magic (bytes must hold at least 4) before anything else, so that any other file
// is called what it is.
void check_magic(std::span<const std::byte> bytes, std::string_view name) {
  check(bytes.size() >= 4, name, ": not an EVL0 checkpoint (", bytes.size(), " bytes)");
  const uint32_t magic = io::get_u32(bytes.data());
  check(magic == kEvlMagic, name, ": not an EVL0 checkpoint (magic ", io::hex32(magic),
        ", expected ", io::hex32(kEvlMagic), ")");
}

// The version field (at byte 4) says the precision.
EvlPrecision check_version(const std::byte* header, std::string_view name) {
  const uint32_t version = io::get_u32(header + 4);
  check(valid_precision(version), name, ": unsupported EVL0 version ", version,
        " (1 = f32, 2 = f16)");
  return static_cast<EvlPrecision>(version);
}

// Parameter count of a checked configuration, and the exact file size it implies.
uint64_t checked_size(const evermind::Config& c, EvlPrecision p, uint64_t actual,
                      std::string_view name, uint64_t* count) {
  uint64_t expected = 0;
  check(checked_param_count(c, count) && checked_file_bytes(*count, p, &expected), name,
        ": header describes a model too large to exist (", config_str(c), ")");
  check(actual == expected, name, ": ", actual, " bytes, but an ", evl_precision_name(p),
        " checkpoint of (", config_str(c), ") is ", expected, " bytes",
        actual < expected ? " (truncated?)" : " (trailing bytes?)");
  return expected;
}

}  // namespace

std::string_view evl_precision_name(EvlPrecision p) {
  return name_of(kPrecisionNames, p, "unknown");
}

EvlPrecision parse_evl_precision(std::string_view name) {
  if (const std::optional<EvlPrecision> p = find_named(kPrecisionNames, name)) return *p;
  fail("EVL0 precision must be ", names_list(kPrecisionNames), " (got '", name, "')");
}

void put_evl_config(std::byte* out, const evermind::Config& c, std::string_view name) {
  try {
    evermind::validate(c);
  } catch (const Error& e) {
    fail(name, ": ", e.what());
  }
  const std::pair<const char*, int64_t> fields[] = {{"vocab_size", c.vocab_size},
                                                    {"d_model", c.d_model},
                                                    {"n_layers", c.n_layers},
                                                    {"conv_kernel", c.conv_kernel},
                                                    {"hidden_dim", c.hidden_dim},
                                                    {"n_experts", c.n_experts},
                                                    {"top_k", c.top_k}};
  for (size_t i = 0; i < 7; ++i) {
    check(fields[i].second <= int64_t{std::numeric_limits<uint32_t>::max()}, name, ": ",
          fields[i].first, " ", fields[i].second, " does not fit the format's u32 field");
    io::put_u32(out + 4 * i, static_cast<uint32_t>(fields[i].second));
  }
}

evermind::Config get_evl_config(const std::byte* in, std::string_view name) {
  evermind::Config c;
  c.vocab_size = io::get_u32(in);
  c.d_model = io::get_u32(in + 4);
  c.n_layers = io::get_u32(in + 8);
  c.conv_kernel = io::get_u32(in + 12);
  c.hidden_dim = io::get_u32(in + 16);
  c.n_experts = io::get_u32(in + 20);
  c.top_k = io::get_u32(in + 24);
  c.seed = 0;
  try {
    evermind::validate(c);
  } catch (const Error& e) {
    fail(name, ": invalid configuration in header: ", e.what());
  }
  return c;
}

uint32_t append_evl_trailer(std::vector<std::byte>& bytes) {
  const size_t n = bytes.size();
  bytes.resize(n + kEvlTrailerBytes);
  io::put_u32(bytes.data() + n, kEvlCrcTag);
  const uint32_t crc = io::crc32(std::span<const std::byte>(bytes).first(n + 4));
  io::put_u32(bytes.data() + n + 4, crc);
  return crc;
}

uint32_t check_evl_trailer(std::span<const std::byte> bytes, std::string_view name) {
  check(bytes.size() >= kEvlTrailerBytes, name, ": too small to hold a CRC trailer");
  const size_t tag_at = bytes.size() - kEvlTrailerBytes;
  const uint32_t tag = io::get_u32(bytes.data() + tag_at);
  check(tag == kEvlCrcTag, name, ": no CRC trailer at byte ", tag_at, " (found ", io::hex32(tag),
        ", expected the tag \"CRC1\"): the file is truncated or has trailing bytes");
  const uint32_t stored = io::get_u32(bytes.data() + tag_at + 4);
  const uint32_t computed = io::crc32(bytes.first(tag_at + 4));
  check(stored == computed, name, ": CRC-32 mismatch (stored ", io::hex32(stored), ", computed ",
        io::hex32(computed), "): the file is corrupt");
  return stored;
}

uint64_t evl_file_bytes(const evermind::Config& config, EvlPrecision precision) {
  evermind::validate(config);
  uint64_t count = 0, bytes = 0;
  check(checked_param_count(config, &count) && checked_file_bytes(count, precision, &bytes),
        "evermind config: model too large (", config_str(config), ")");
  return bytes;
}

std::vector<std::byte> encode_evl(const evermind::Config& config, std::span<const float> params,
                                  EvlPrecision precision) {
  std::vector<std::byte> out;
  // Sized from the parameters at hand, not the configuration, which is checked only below.
  out.reserve(kEvlHeaderBytes + params.size() * value_bytes(precision) + kEvlTrailerBytes);
  emit_evl(config, params, precision, "EVL0 checkpoint",
           [&](std::span<const std::byte> b) { out.insert(out.end(), b.begin(), b.end()); });
  return out;
}

uint32_t save_evl(const std::string& path, const evermind::Config& config,
                  std::span<const float> params, EvlPrecision precision) {
  io::AtomicFile file(path);
  const uint32_t crc = emit_evl(config, params, precision, path,
                                [&](std::span<const std::byte> b) { file.write(b); });
  file.commit();
  return crc;
}

EvlCheckpoint decode_evl(std::span<const std::byte> bytes, std::string_view name) {
  constexpr size_t kMin = kEvlHeaderBytes + kEvlTrailerBytes;
  check_magic(bytes, name);
  check(bytes.size() >= kMin, name, ": ", bytes.size(),
        " bytes is shorter than an EVL0 header and trailer (", kMin, "): truncated");
  EvlCheckpoint ck;
  ck.precision = check_version(bytes.data(), name);
  // The CRC before the header's sizes: a damaged header is reported as damage, not as a
  // confusing size mismatch, and nothing is sized from unchecked fields.
  ck.crc = check_evl_trailer(bytes, name);
  ck.config = get_evl_config(bytes.data() + 8, name);
  uint64_t count = 0;
  checked_size(ck.config, ck.precision, bytes.size(), name, &count);
  const size_t layout_count = evermind::param_layout(ck.config).size();
  check(layout_count == count, name, ": internal error: EVL0 parameter count ", count,
        " disagrees with the EvermindLM layout (", layout_count, ")");

  ck.params.resize(count);
  const std::byte* p = bytes.data() + kEvlHeaderBytes;
  if (ck.precision == EvlPrecision::f32) {
    for (size_t i = 0; i < count; ++i) ck.params[i] = bits_float(io::get_u32(p + 4 * i));
  } else {
    for (size_t i = 0; i < count; ++i) {
      const auto h = static_cast<uint16_t>(static_cast<uint16_t>(p[2 * i]) |
                                           static_cast<uint16_t>(p[2 * i + 1]) << 8);
      ck.params[i] = f16_to_float(h);
    }
  }
  return ck;
}

EvlCheckpoint load_evl(const std::string& path) {
  const io::MappedFile file = io::MappedFile::open(path);
  return decode_evl(file.bytes(), path);
}

EvlCheckpoint load_evl(const std::string& path, const evermind::Config& expected) {
  EvlCheckpoint ck = load_evl(path);
  check_evl_config(ck.config, expected, path);
  return ck;
}

EvlHeader decode_evl_header(std::span<const std::byte> head, uint64_t file_bytes,
                            std::string_view name) {
  check_magic(head, name);
  check(file_bytes >= kEvlHeaderBytes + kEvlTrailerBytes && head.size() >= kEvlHeaderBytes, name,
        ": ", file_bytes, " bytes is shorter than an EVL0 header and trailer (",
        kEvlHeaderBytes + kEvlTrailerBytes, "): truncated");
  EvlHeader h;
  h.precision = check_version(head.data(), name);
  h.config = get_evl_config(head.data() + 8, name);
  uint64_t count = 0;
  h.file_bytes = checked_size(h.config, h.precision, file_bytes, name, &count);
  return h;
}

EvlHeader read_evl_header(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(::fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    fail(path, ": not a regular file");
  }
  std::array<std::byte, kEvlHeaderBytes> head{};
  const size_t got = std::fread(head.data(), 1, head.size(), f);
  std::fclose(f);
  return decode_evl_header(std::span<const std::byte>(head).first(got),
                           static_cast<uint64_t>(st.st_size), path);
}

std::string evl_config_diff(const evermind::Config& found, const evermind::Config& expected,
                            std::string_view label) {
  std::string diff;
  const auto field = [&](const char* what, int64_t f, int64_t e) {
    if (f != e) diff += cat(diff.empty() ? "" : ", ", what, " ", f, " (", label, " ", e, ")");
  };
  field("vocab_size", found.vocab_size, expected.vocab_size);
  field("d_model", found.d_model, expected.d_model);
  field("n_layers", found.n_layers, expected.n_layers);
  field("conv_kernel", found.conv_kernel, expected.conv_kernel);
  field("hidden_dim", found.hidden_dim, expected.hidden_dim);
  field("n_experts", found.n_experts, expected.n_experts);
  field("top_k", found.top_k, expected.top_k);
  return diff;
}

void check_evl_config(const evermind::Config& found, const evermind::Config& expected,
                      std::string_view name) {
  const std::string diff = evl_config_diff(found, expected, "model");
  check(diff.empty(), name, ": checkpoint does not match the model: ", diff);
}

std::string evl_tokenizer_path(const std::string& model_path) {
  return std::filesystem::path(model_path).replace_extension(".tokenizer.json").string();
}

}  // namespace tinylm::checkpoints
