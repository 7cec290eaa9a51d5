#include "tinylm/train/train_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>

#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/crc32.h"
#include "tinylm/io/file_crc.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/little_endian.h"

namespace tinylm::train {

namespace {

// The moments are written and read as they lie in memory, without a conversion pass.
static_assert(std::endian::native == std::endian::little, "train_state.bin is little-endian");

using Json = nlohmann::ordered_json;
using Bytes = std::span<const std::byte>;

constexpr uint64_t kHeaderBytes = 32;
constexpr uint64_t kCrcBytes = 4;
constexpr uint64_t kAlign = 64;
constexpr size_t kOverlapBytes = size_t{64} << 20;

template <class T>
constexpr uint32_t kDtype = sizeof(T) == 4 ? 1 : 2;
static_assert(sizeof(float) == 4 && sizeof(double) == 8);

const char* dtype_name(uint32_t code) { return code == 1 ? "f32" : "f64"; }

void put_u64(std::byte* p, uint64_t v) {
  io::put_u32(p, static_cast<uint32_t>(v));
  io::put_u32(p + 4, static_cast<uint32_t>(v >> 32));
}

uint64_t get_u64(const std::byte* p) {
  return uint64_t{io::get_u32(p)} | uint64_t{io::get_u32(p + 4)} << 32;
}

// The integer fields with their JSON names, for the range checks.
template <class T>
std::array<std::pair<const char*, int64_t>, 7> int_fields(const TrainState<T>& s) {
  return {{{"step", s.loop.step},
           {"applied_steps", s.loop.applied_steps},
           {"tokens_seen", s.loop.tokens_seen},
           {"bad_steps_in_a_row", s.loop.bad_steps_in_a_row},
           {"best_val_step", s.loop.best_val_step},
           {"scaler_good_in_a_row", s.loop.scaler_good_in_a_row},
           {"scaler_skipped", s.loop.scaler_skipped}}};
}

// The rules of the header comment, for the writer and the reader alike.
template <class T>
void check_state(const TrainState<T>& s, size_t m_size, size_t v_size, std::string_view name) {
  check(!s.arch.empty(), name, ": \"arch\" is empty");
  for (const auto& [key, value] : int_fields(s))
    check(value >= 0, name, ": \"", key, "\" is negative (", value, ")");
  const auto at_most_step = [&](int64_t v, const char* what) {
    check(v <= s.loop.step, name, ": \"", what, "\" (", v, ") exceeds \"step\" (", s.loop.step,
          ")");
  };
  at_most_step(s.loop.applied_steps, "applied_steps");
  at_most_step(s.loop.bad_steps_in_a_row, "bad_steps_in_a_row");
  at_most_step(s.loop.scaler_skipped, "scaler_skipped");
  at_most_step(s.loop.best_val_step, "best_val_step");
  // JSON has no NaN or infinity (nlohmann would write null), so these must be finite.
  check(!s.loop.best_val_loss || std::isfinite(*s.loop.best_val_loss), name,
        ": \"best_val_loss\" is not finite");
  check(std::isfinite(s.loop.loss_scale) && s.loop.loss_scale > 0, name, ": \"loss_scale\" (",
        s.loop.loss_scale, ") is not a positive finite number");
  check(std::isfinite(s.loop.elapsed_s) && s.loop.elapsed_s >= 0, name, ": \"elapsed_s\" (",
        s.loop.elapsed_s, ") is not a non-negative finite number");
  check(s.shards >= 1, name, ": \"shards\" (", s.shards, ") is not >= 1");
  check(s.config.is_object(), name, ": \"config\" is not a JSON object");
  if (s.files) {
    for (const auto& [file, crc] : *s.files) {
      (void)crc;
      check(!file.empty() && file != "." && file != ".." && file.find('/') == std::string::npos,
            name, ": \"files\" names '", file, "', not a plain file name");
    }
  }
  check(m_size == v_size, name, ": moment vectors differ in size (m ", m_size, ", v ", v_size, ")");
}

template <class T>
std::string state_json(const TrainState<T>& s, std::string_view name) {
  Json j;
  j["arch"] = s.arch;
  j["step"] = s.loop.step;
  j["applied_steps"] = s.loop.applied_steps;
  j["tokens_seen"] = s.loop.tokens_seen;
  j["bad_steps_in_a_row"] = s.loop.bad_steps_in_a_row;
  j["best_val_loss"] = s.loop.best_val_loss ? Json(*s.loop.best_val_loss) : Json(nullptr);
  j["best_val_step"] = s.loop.best_val_step;
  j["loss_scale"] = s.loop.loss_scale;
  j["scaler_good_in_a_row"] = s.loop.scaler_good_in_a_row;
  j["scaler_skipped"] = s.loop.scaler_skipped;
  j["elapsed_s"] = s.loop.elapsed_s;
  j["shards"] = s.shards;
  j["config"] = s.config;
  if (s.files) j["files"] = *s.files;
  try {
    return j.dump();  // nlohmann prints doubles with enough digits to read back the same bits
  } catch (const nlohmann::json::exception& e) {
    fail(name, ": cannot write the state as JSON: ", e.what());  // e.g. invalid UTF-8
  }
}

const Json& field(const Json& j, const char* key, std::string_view name) {
  const auto it = j.find(key);
  check(it != j.end(), name, ": state JSON lacks \"", key, "\"");
  return *it;
}

int64_t int_field(const Json& j, const char* key, std::string_view name) {
  const Json& f = field(j, key, name);
  check(f.is_number_integer(), name, ": \"", key, "\" is not an integer");
  check(
      !f.is_number_unsigned() || f.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()},
      name, ": \"", key, "\" is out of range");
  return f.get<int64_t>();
}

double number_field(const Json& j, const char* key, std::string_view name) {
  const Json& f = field(j, key, name);
  check(f.is_number(), name, ": \"", key, "\" is not a number");
  return f.get<double>();
}

template <class T>
void parse_state_json(std::string_view text, std::string_view name, TrainState<T>& s) {
  Json j = io::parse_json_strict(text, std::string(name));
  check(j.is_object(), name, ": state JSON is not an object");
  const Json& arch = field(j, "arch", name);
  check(arch.is_string(), name, ": \"arch\" is not a string");
  s.arch = arch.get<std::string>();
  s.loop.step = int_field(j, "step", name);
  s.loop.applied_steps = int_field(j, "applied_steps", name);
  s.loop.tokens_seen = int_field(j, "tokens_seen", name);
  s.loop.bad_steps_in_a_row = int_field(j, "bad_steps_in_a_row", name);
  if (!field(j, "best_val_loss", name).is_null())
    s.loop.best_val_loss = number_field(j, "best_val_loss", name);
  s.loop.best_val_step = int_field(j, "best_val_step", name);
  s.loop.loss_scale = number_field(j, "loss_scale", name);
  s.loop.scaler_good_in_a_row = int_field(j, "scaler_good_in_a_row", name);
  s.loop.scaler_skipped = int_field(j, "scaler_skipped", name);
  s.loop.elapsed_s = number_field(j, "elapsed_s", name);
  s.shards = j.contains("shards") ? int_field(j, "shards", name) : 1;  // 1: before --devices
  const auto config = j.find("config");
  check(config != j.end(), name, ": state JSON lacks \"config\"");
  s.config = std::move(*config);
  if (const auto files = j.find("files"); files != j.end()) {
    check(files->is_object(), name, ": \"files\" is not a JSON object");
    s.files.emplace();
    for (auto it = files->begin(); it != files->end(); ++it) {
      const Json& crc = it.value();
      check(crc.is_number_unsigned() && crc.get<uint64_t>() <= 0xffffffffu, name,
            ": \"files\": the CRC of '", it.key(), "' is not a 32-bit unsigned number");
      (*s.files)[it.key()] = crc.get<uint32_t>();
    }
  }
  check_state(s, s.m.size(), s.v.size(), name);
}

// Where the moments start (after the JSON and its padding) and the file size, for n moments
// of `width` bytes and a JSON of json_bytes; false when the arithmetic overflows.
bool layout(uint64_t n, uint64_t width, uint64_t json_bytes, uint64_t* offset, uint64_t* total) {
  uint64_t end = 0, one = 0, both = 0;
  if (__builtin_add_overflow(kHeaderBytes + kAlign - 1, json_bytes, &end)) return false;
  *offset = end / kAlign * kAlign;
  return !__builtin_mul_overflow(n, width, &one) &&
         !__builtin_mul_overflow(one, uint64_t{2}, &both) &&
         !__builtin_add_overflow(*offset, both, total) &&
         !__builtin_add_overflow(*total, kCrcBytes, total);
}

// Streams the file through emit(bytes): the header and JSON of s, the moments straight from
// where they are (no second copy of them), then the CRC of all of it.
template <class T, class Emit>
void emit_state(const TrainState<T>& s, std::span<const T> m, std::span<const T> v,
                std::string_view name, Emit&& emit) {
  check_state(s, m.size(), v.size(), name);
  const std::string json = state_json(s, name);
  uint64_t offset = 0, total = 0;
  check(layout(m.size(), sizeof(T), json.size(), &offset, &total), name, ": state too large");
  std::vector<std::byte> head(offset);  // zero-filled: the padding
  std::memcpy(head.data(), kTrainStateMagic, 8);
  io::put_u32(head.data() + 8, kTrainStateVersion);
  io::put_u32(head.data() + 12, kDtype<T>);
  put_u64(head.data() + 16, m.size());
  put_u64(head.data() + 24, json.size());
  std::memcpy(head.data() + kHeaderBytes, json.data(), json.size());
  const uint32_t head_crc = io::crc32(head);
  const auto moments_crc = [&] {
    return io::crc32_parallel(std::as_bytes(v), io::crc32_parallel(std::as_bytes(m), head_crc));
  };
  // Large moments are checksummed on other threads while they are written.
  const bool overlap = m.size() * sizeof(T) >= kOverlapBytes;
  std::future<uint32_t> pending;
  if (overlap) pending = std::async(std::launch::async, moments_crc);
  emit(Bytes(head));
  emit(std::as_bytes(m));
  emit(std::as_bytes(v));
  std::byte tail[kCrcBytes];
  io::put_u32(tail, overlap ? pending.get() : moments_crc());
  emit(Bytes(tail));
}

// Sources of exactly `size` bytes for decode: read(dst, n) copies the next n bytes or throws.
class SpanSource {
 public:
  SpanSource(Bytes bytes, std::string_view name) : bytes_(bytes), name_(name) {}
  uint64_t size() const { return bytes_.size(); }
  void read(std::byte* dst, size_t n) {
    check(n <= bytes_.size() - at_, name_, ": truncated");
    if (n > 0) std::memcpy(dst, bytes_.data() + at_, n);
    at_ += n;
  }

 private:
  Bytes bytes_;
  std::string_view name_;
  size_t at_ = 0;
};

class FileSource {
 public:
  explicit FileSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(path, ": cannot open: ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail(path, ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const { return size_; }
  void read(std::byte* dst, size_t n) {
    while (n > 0) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(path_, ": read failed: ", std::strerror(errno));
      check(got > 0, path_, ": truncated (the file shrank while it was read)");
      dst += got;
      n -= static_cast<size_t>(got);
    }
  }

 private:
  const std::string& path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

template <class T, class Source>
TrainState<T> decode_from(Source& src, std::string_view name) {
  const uint64_t size = src.size();
  std::byte header[kHeaderBytes];
  src.read(header, static_cast<size_t>(std::min(size, kHeaderBytes)));
  // The magic first (as much of it as there is), so that any other file is called that.
  const size_t magic_bytes = static_cast<size_t>(std::min<uint64_t>(size, 8));
  check(std::memcmp(header, kTrainStateMagic, magic_bytes) == 0, name,
        ": not a tinylm training state (bad magic)");
  check(size >= kHeaderBytes + kCrcBytes, name, ": truncated (", size,
        " bytes, a training state has at least ", kHeaderBytes + kCrcBytes, ")");
  const uint32_t version = io::get_u32(header + 8), dtype = io::get_u32(header + 12);
  check(version == kTrainStateVersion, name, ": unsupported training state version ", version,
        " (this build reads ", kTrainStateVersion, ")");
  check(dtype == 1 || dtype == 2, name, ": unknown moment dtype ", dtype, " (1 = f32, 2 = f64)");
  check(dtype == kDtype<T>, name, ": moments are ", dtype_name(dtype), ", expected ",
        dtype_name(kDtype<T>));
  const uint64_t n = get_u64(header + 16), json_bytes = get_u64(header + 24);
  uint64_t expected = 0, offset = 0;
  check(layout(n, sizeof(T), json_bytes, &offset, &expected), name, ": header sizes overflow (n ",
        n, ", json_bytes ", json_bytes, "): corrupt");
  check(size >= expected, name, ": truncated (", size, " bytes, the header describes ", expected,
        ")");
  check(size == expected, name, ": ", size, " bytes, the header describes ", expected,
        " (trailing bytes)");

  // Only now, with every size bounded by the file's, is anything allocated.
  std::vector<std::byte> text(static_cast<size_t>(offset - kHeaderBytes));
  src.read(text.data(), text.size());
  TrainState<T> s;
  s.m.resize(static_cast<size_t>(n));
  s.v.resize(static_cast<size_t>(n));
  src.read(reinterpret_cast<std::byte*>(s.m.data()), s.m.size() * sizeof(T));
  src.read(reinterpret_cast<std::byte*>(s.v.data()), s.v.size() * sizeof(T));
  std::byte tail[kCrcBytes];
  src.read(tail, kCrcBytes);
  uint32_t crc = io::crc32(Bytes(header));
  crc = io::crc32(Bytes(text), crc);
  crc = io::crc32_parallel(std::as_bytes(std::span<const T>(s.m)), crc);
  crc = io::crc32_parallel(std::as_bytes(std::span<const T>(s.v)), crc);
  check(io::get_u32(tail) == crc, name, ": checksum mismatch (file corrupt)");

  const auto padding = std::span(text).subspan(static_cast<size_t>(json_bytes));
  check(std::all_of(padding.begin(), padding.end(), [](std::byte b) { return b == std::byte{0}; }),
        name, ": nonzero padding after the state JSON");
  parse_state_json(
      std::string_view(reinterpret_cast<const char*>(text.data()), static_cast<size_t>(json_bytes)),
      name, s);
  return s;
}

}  // namespace

template <class T>
std::vector<std::byte> encode_train_state(const TrainState<T>& state) {
  std::vector<std::byte> out;
  emit_state(state, std::span<const T>(state.m), std::span<const T>(state.v), "training state",
             [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); });
  return out;
}

template <class T>
TrainState<T> decode_train_state(std::span<const std::byte> bytes, std::string_view name) {
  SpanSource src(bytes, name);
  return decode_from<T>(src, name);
}

template <class T>
void save_train_state(const std::string& path, const TrainState<T>& state, std::span<const T> m,
                      std::span<const T> v) {
  io::AtomicFile file(path);  // removed again if anything below throws
  emit_state(state, m, v, path, [&](Bytes b) { file.write(b); });
  file.commit();
}

template <class T>
void save_train_state(const std::string& path, const TrainState<T>& state) {
  save_train_state(path, state, std::span<const T>(state.m), std::span<const T>(state.v));
}

template <class T>
TrainState<T> load_train_state(const std::string& path) {
  FileSource src(path);
  return decode_from<T>(src, path);
}

#define TINYLM_TRAIN_STATE(T)                                                                  \
  template std::vector<std::byte> encode_train_state(const TrainState<T>&);                    \
  template TrainState<T> decode_train_state(std::span<const std::byte>, std::string_view);     \
  template void save_train_state(const std::string&, const TrainState<T>&);                    \
  template void save_train_state(const std::string&, const TrainState<T>&, std::span<const T>, \
                                 std::span<const T>);                                          \
  template TrainState<T> load_train_state(const std::string&);
TINYLM_TRAIN_STATE(float)
TINYLM_TRAIN_STATE(double)
#undef TINYLM_TRAIN_STATE

}  // namespace tinylm::train
