#include "tinylm/io/gguf.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/little_endian.h"
#include "tinylm/io/mapped_file.h"

namespace tinylm::io {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint32_t kMaxDims = 4;       // GGML_MAX_DIMS
constexpr size_t kMaxTensorName = 63;  // GGML_MAX_NAME is 64 with the terminating NUL
constexpr uint64_t kMaxAlignment = 1 << 20;

// Bytes of one scalar of a key/value type; 0 for string and array.
uint64_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::boolean:
      return 1;
    case GgufType::u16:
    case GgufType::i16:
      return 2;
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::f32:
      return 4;
    case GgufType::u64:
    case GgufType::i64:
    case GgufType::f64:
      return 8;
    default:
      return 0;
  }
}

bool is_int(GgufType t) {
  return t != GgufType::f32 && t != GgufType::f64 && scalar_bytes(t) != 0 && t != GgufType::boolean;
}
bool is_signed(GgufType t) {
  return t == GgufType::i8 || t == GgufType::i16 || t == GgufType::i32 || t == GgufType::i64;
}

// A bounds-checked cursor over the file's bytes; every read names what it reads in errors.
class Cursor {
 public:
  Cursor(std::span<const std::byte> b, const std::string& name) : b_(b), name_(name) {}

  size_t pos() const { return pos_; }
  uint64_t left() const { return b_.size() - pos_; }

  // `what` names the field for the error: parts formatted only when a read fails, as an array's
  // elements are read by the hundred thousand.
  template <class... What>
  void need(uint64_t n, const What&... what) const {
    if (n > left()) {
      fail(name_, ": truncated: ", what..., " needs ", n, " bytes at offset ", pos_,
           ", the file has ", left(), " left");
    }
  }
  template <class... What>
  uint64_t uint(unsigned bytes, const What&... what) {
    need(bytes, what...);
    const uint64_t v = get_le(b_.data() + pos_, bytes);
    pos_ += bytes;
    return v;
  }
  template <class... What>
  uint32_t u32(const What&... what) {
    return static_cast<uint32_t>(uint(4, what...));
  }
  template <class... What>
  uint64_t u64(const What&... what) {
    return uint(8, what...);
  }
  template <class... What>
  std::string str(const What&... what) {
    const uint64_t n = u64(what..., " length");
    need(n, what..., " of ", n, " bytes");
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const std::byte> b_;
  const std::string& name_;
  size_t pos_ = 0;
};

// ggml's names of the tensor types it defines, for the "unsupported type" error.
const char* known_ggml_type(uint32_t t) {
  static constexpr const char* kNames[] = {"F32",
                                           "F16",
                                           "Q4_0",
                                           "Q4_1",
                                           "Q4_2 (removed)",
                                           "Q4_3 (removed)",
                                           "Q5_0",
                                           "Q5_1",
                                           "Q8_0",
                                           "Q8_1",
                                           "Q2_K",
                                           "Q3_K",
                                           "Q4_K",
                                           "Q5_K",
                                           "Q6_K",
                                           "Q8_K",
                                           "IQ2_XXS",
                                           "IQ2_XS",
                                           "IQ3_XXS",
                                           "IQ1_S",
                                           "IQ4_NL",
                                           "IQ3_S",
                                           "IQ2_S",
                                           "IQ4_XS",
                                           "I8",
                                           "I16",
                                           "I32",
                                           "I64",
                                           "F64",
                                           "IQ1_M",
                                           "BF16",
                                           "Q4_0_4_4 (removed)",
                                           "Q4_0_4_8 (removed)",
                                           "Q4_0_8_8 (removed)",
                                           "TQ1_0",
                                           "TQ2_0",
                                           "IQ4_NL_4_4 (removed)",
                                           "IQ4_NL_4_8 (removed)",
                                           "IQ4_NL_8_8 (removed)",
                                           "MXFP4"};
  return t < std::size(kNames) ? kNames[t] : nullptr;
}

// The tensor types tinylm reads, in the order errors list them, each with the element type it
// is in tinylm (whose block size and bytes, core/dtype.h, are the file's) and llama.cpp's
// general.file_type (LLAMA_FTYPE_*) of a file whose weights are of it.
struct GgmlTypeFacts {
  GgmlType type;
  DType dtype;
  uint32_t file_type;
};
constexpr GgmlTypeFacts kGgmlTypes[] = {
    {GgmlType::f32, DType::f32, 0},     // ALL_F32
    {GgmlType::f16, DType::f16, 1},     // MOSTLY_F16
    {GgmlType::q8_0, DType::q8_0, 7},   // MOSTLY_Q8_0
    {GgmlType::q4_0, DType::q4_0, 2},   // MOSTLY_Q4_0
    {GgmlType::q4_k, DType::q4_k, 14},  // MOSTLY_Q4_K_S
    {GgmlType::q5_k, DType::q5_k, 16},  // MOSTLY_Q5_K_S
    {GgmlType::q6_k, DType::q6_k, 18},  // MOSTLY_Q6_K
};

const GgmlTypeFacts* facts(uint32_t type) {
  for (const GgmlTypeFacts& f : kGgmlTypes) {
    if (static_cast<uint32_t>(f.type) == type) return &f;
  }
  return nullptr;
}

// "F32, F16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K".
std::string supported_ggml_types() {
  std::string s;
  for (size_t i = 0; i < std::size(kGgmlTypes); ++i) {
    if (i > 0) s += i + 1 == std::size(kGgmlTypes) ? " and " : ", ";
    s += known_ggml_type(static_cast<uint32_t>(kGgmlTypes[i].type));
  }
  return s;
}

// a * b, or false on overflow.
bool mul_ok(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

std::string dims_str(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  static constexpr const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

std::string ggml_type_name(uint32_t type) {
  const char* n = known_ggml_type(type);
  return n ? n : "type " + std::to_string(type);
}

DType ggml_dtype(GgmlType t) {
  const GgmlTypeFacts* f = facts(static_cast<uint32_t>(t));
  check(f != nullptr, "[ggml_dtype] invalid ggml type ", static_cast<uint32_t>(t));
  return f->dtype;
}

uint32_t ggml_file_type(GgmlType t) {
  const GgmlTypeFacts* f = facts(static_cast<uint32_t>(t));
  check(f != nullptr, "[ggml_file_type] invalid ggml type ", static_cast<uint32_t>(t));
  return f->file_type;
}

bool ggml_type_supported(uint32_t type) { return facts(type) != nullptr; }

uint64_t ggml_block_size(GgmlType t) {
  return static_cast<uint64_t>(dtype_block_size(ggml_dtype(t)));
}

uint64_t ggml_block_bytes(GgmlType t) { return dtype_block_bytes(ggml_dtype(t)); }

size_t GgufValue::size() const { return std::max({ints.size(), floats.size(), strings.size()}); }

// ---------------------------------------------------------------------------------------------
// Reading

namespace {

// Reads one scalar of type t (not string, not array) into v; `what` as for Cursor.
template <class... What>
void read_scalar(Cursor& c, GgufType t, GgufValue& v, const std::string& name,
                 const What&... what) {
  if (t == GgufType::string) {
    v.strings.push_back(c.str(what...));
    return;
  }
  const unsigned n = static_cast<unsigned>(scalar_bytes(t));
  uint64_t bits = c.uint(n, what...);
  if (t == GgufType::f32) {
    v.floats.push_back(bits_float(static_cast<uint32_t>(bits)));
  } else if (t == GgufType::f64) {
    double d;
    std::memcpy(&d, &bits, 8);
    v.floats.push_back(d);
  } else {
    if (t == GgufType::boolean && bits > 1) {
      fail(name, ": ", what..., ": boolean value ", bits, " is neither 0 nor 1");
    }
    if (is_signed(t) && n < 8 && (bits >> (8 * n - 1)) & 1) bits |= ~uint64_t{0} << (8 * n);
    v.ints.push_back(bits);
  }
}

GgufType read_type(Cursor& c, const std::string& what, const std::string& name) {
  const uint32_t t = c.u32(what);
  check(t <= static_cast<uint32_t>(GgufType::f64), name, ": ", what, ": unknown value type ", t);
  return static_cast<GgufType>(t);
}

}  // namespace

void GgufFile::parse() {
  const std::string& name = path();
  Cursor c(file_, name);
  c.need(4, "the magic");
  check(std::memcmp(file_.data(), "GGUF", 4) == 0, name, ": not a GGUF file (no GGUF magic)");
  c.uint(4, "the magic");
  version_ = c.u32("the version");
  check(version_ != 0x03000000 && version_ != 0x02000000, name,
        ": a big-endian GGUF file, not supported");
  check(version_ == kVersion, name, ": GGUF version ", version_, " is not supported (only ",
        kVersion, ")");
  const uint64_t n_tensors = c.u64("the tensor count");
  const uint64_t n_kv = c.u64("the key/value count");
  // The smallest key/value is 14 bytes (length, a 1-byte key, type, a 1-byte value) and the
  // smallest tensor info 33 (a 1-byte name, one dimension): a count the remaining bytes cannot
  // hold is refused before anything is allocated for it.
  check(n_kv <= c.left() / 14, name, ": key/value count ", n_kv, " is more than the ", c.left(),
        " bytes left can hold");
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string where = "key/value " + std::to_string(i);
    std::string key = c.str(where + ": key");
    check(!key.empty(), name, ": ", where, ": empty key");
    const std::string what = "key " + key;
    check(!kv_index_.count(key), name, ": duplicate ", what);
    GgufValue v;
    v.type = read_type(c, what + ": type", name);
    if (v.type == GgufType::array) {
      v.elem = read_type(c, what + ": array element type", name);
      check(v.elem != GgufType::array, name, ": ", what, ": arrays of arrays are not supported");
      const uint64_t count = c.u64(what + ": array length");
      const uint64_t min_bytes = v.elem == GgufType::string ? 8 : scalar_bytes(v.elem);
      check(count <= c.left() / min_bytes, name, ": ", what, ": array length ", count,
            " is more than the ", c.left(), " bytes left can hold");
      if (v.elem == GgufType::string) v.strings.reserve(count);
      for (uint64_t j = 0; j < count; ++j) {
        read_scalar(c, v.elem, v, name, what, "[", j, "]");
      }
    } else {
      v.elem = v.type;
      read_scalar(c, v.type, v, name, what);
    }
    kv_index_[key] = kv_.size();
    kv_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = find("general.alignment")) {
    check(a->type == GgufType::u32, name, ": general.alignment is a ", gguf_type_name(a->type),
          ", expected u32");
    alignment_ = a->ints[0];
    check(alignment_ != 0 && (alignment_ & (alignment_ - 1)) == 0 && alignment_ <= kMaxAlignment,
          name, ": general.alignment ", alignment_, " is not a power of two up to ", kMaxAlignment);
  }

  check(n_tensors <= c.left() / 33, name, ": tensor count ", n_tensors, " is more than the ",
        c.left(), " bytes left can hold");
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.str("tensor info " + std::to_string(i) + ": name");
    check(!t.name.empty(), name, ": tensor info ", i, ": empty name");
    check(t.name.size() <= kMaxTensorName, name, ": tensor info ", i, ": name of ", t.name.size(),
          " bytes (ggml allows ", kMaxTensorName, ")");
    const std::string what = "tensor " + t.name;
    check(!tensor_index_.count(t.name), name, ": duplicate ", what);
    const uint32_t n_dims = c.u32(what + ": n_dims");
    check(n_dims >= 1 && n_dims <= kMaxDims, name, ": ", what, ": ", n_dims, " dimensions (1 to ",
          kMaxDims, " allowed)");
    for (uint32_t d = 0; d < n_dims; ++d) t.ne.push_back(c.u64(what + ": dimension"));
    const uint32_t type = c.u32(what + ": type");
    if (!ggml_type_supported(type)) {
      fail(name, ": ", what, ": unsupported tensor type ", ggml_type_name(type), " (tinylm reads ",
           supported_ggml_types(), ")");
    }
    t.type = static_cast<GgmlType>(type);
    t.offset = c.u64(what + ": offset");
    // Element count and bytes, overflow-checked; a quantized row is whole blocks.
    const uint64_t block = ggml_block_size(t.type);
    check(t.ne[0] % block == 0, name, ": ", what, ": ", ggml_type_name(type), " rows of ", t.ne[0],
          " elements are not whole blocks of ", block);
    t.numel = 1;
    bool ok = mul_ok(t.ne[0] / block, ggml_block_bytes(t.type), t.bytes);
    for (uint32_t d = 0; d < n_dims; ++d) {
      ok = ok && t.ne[d] <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
           mul_ok(t.numel, t.ne[d], t.numel) && (d == 0 || mul_ok(t.bytes, t.ne[d], t.bytes));
    }
    check(ok, name, ": ", what, ": dimensions ", dims_str(t.ne), " overflow");
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  // The data section: at the next multiple of the alignment.
  const uint64_t header_end = c.pos();
  const uint64_t data_start = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (data_start <= file_.size()) {
    data_ = file_.subspan(data_start);
  } else {
    check(tensors_.empty(), name, ": truncated: the data section starts at ", data_start,
          " past the end of the file (", file_.size(), " bytes)");
  }
  for (const GgufTensor& t : tensors_) {
    check(t.offset % alignment_ == 0, name, ": tensor ", t.name, ": offset ", t.offset,
          " is not a multiple of the alignment ", alignment_);
    check(t.offset <= data_.size() && t.bytes <= data_.size() - t.offset, name, ": tensor ", t.name,
          ": bytes [", t.offset, ", ", t.offset + t.bytes,
          ") of the data section exceed "
          "its ",
          data_.size(), " bytes (truncated file?)");
  }
  std::vector<const GgufTensor*> by_offset;
  for (const GgufTensor& t : tensors_)
    if (t.bytes) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor& a = *by_offset[i - 1];
    const GgufTensor& b = *by_offset[i];
    check(a.offset + a.bytes <= b.offset, name, ": tensors ", a.name, " and ", b.name,
          " overlap in the data section");
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

namespace {
const GgufValue& must(const GgufValue* v, const std::string& file, const std::string& key) {
  check(v != nullptr, file, ": no key ", key);
  return *v;
}
}  // namespace

uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue& v = must(find(key), path(), key);
  check(!v.is_array() && is_int(v.type), path(), ": key ", key, " is a ", gguf_type_name(v.type),
        ", expected an integer");
  check(!is_signed(v.type) || static_cast<int64_t>(v.ints[0]) >= 0, path(), ": key ", key,
        " is negative: ", static_cast<int64_t>(v.ints[0]));
  return v.ints[0];
}

double GgufFile::get_float(const std::string& key) const {
  const GgufValue& v = must(find(key), path(), key);
  check(v.type == GgufType::f32 || v.type == GgufType::f64, path(), ": key ", key, " is a ",
        gguf_type_name(v.type), ", expected f32 or f64");
  return v.floats[0];
}

const std::string& GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = must(find(key), path(), key);
  check(v.type == GgufType::string, path(), ": key ", key, " is a ", gguf_type_name(v.type),
        ", expected a string");
  return v.strings[0];
}

const GgufValue& GgufFile::get_array(const std::string& key, GgufType elem) const {
  const GgufValue& v = must(find(key), path(), key);
  check(v.is_array() && v.elem == elem, path(), ": key ", key, " is ",
        v.is_array() ? "an array of " + std::string(gguf_type_name(v.elem))
                     : "a " + std::string(gguf_type_name(v.type)),
        ", expected an array of ", gguf_type_name(elem));
  return v;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> GgufFile::data(const GgufTensor& t) const {
  return data_.subspan(t.offset, t.bytes);
}

void GgufFile::populate(const GgufTensor& t) const { storage_->populate(data(t)); }

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

void put_str(std::vector<std::byte>& out, std::string_view s) {
  append_le(out, s.size(), 8);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  check(alignment != 0 && (alignment & (alignment - 1)) == 0 && alignment <= kMaxAlignment,
        "GGUF writer: alignment ", alignment, " is not a power of two up to ", kMaxAlignment);
  if (alignment != 32) add_u32("general.alignment", alignment);
}

void GgufWriter::begin_kv(const std::string& key, GgufType type) {
  check(!key.empty(), "GGUF writer: empty key");
  check(std::find(keys_.begin(), keys_.end(), key) == keys_.end(), "GGUF writer: duplicate key ",
        key);
  keys_.push_back(key);
  ++n_kv_;
  put_str(kv_, key);
  append_le(kv_, static_cast<uint32_t>(type), 4);
}

void GgufWriter::add_scalar(const std::string& key, GgufType type, uint64_t bits) {
  begin_kv(key, type);
  append_le(kv_, bits, static_cast<unsigned>(scalar_bytes(type)));
}

void GgufWriter::begin_array(const std::string& key, GgufType elem, uint64_t count) {
  begin_kv(key, GgufType::array);
  append_le(kv_, static_cast<uint32_t>(elem), 4);
  append_le(kv_, count, 8);
}

void GgufWriter::add_u32(const std::string& key, uint32_t v) { add_scalar(key, GgufType::u32, v); }
void GgufWriter::add_i32(const std::string& key, int32_t v) {
  add_scalar(key, GgufType::i32, static_cast<uint32_t>(v));
}
void GgufWriter::add_u64(const std::string& key, uint64_t v) { add_scalar(key, GgufType::u64, v); }
void GgufWriter::add_f32(const std::string& key, float v) {
  add_scalar(key, GgufType::f32, float_bits(v));
}
void GgufWriter::add_bool(const std::string& key, bool v) {
  add_scalar(key, GgufType::boolean, v ? 1 : 0);
}
void GgufWriter::add_string(const std::string& key, std::string_view v) {
  begin_kv(key, GgufType::string);
  put_str(kv_, v);
}
void GgufWriter::add_string_array(const std::string& key, std::span<const std::string> v) {
  begin_array(key, GgufType::string, v.size());
  for (const std::string& s : v) put_str(kv_, s);
}
void GgufWriter::add_i32_array(const std::string& key, std::span<const int32_t> v) {
  begin_array(key, GgufType::i32, v.size());
  for (int32_t x : v) append_le(kv_, static_cast<uint32_t>(x), 4);
}
void GgufWriter::add_f32_array(const std::string& key, std::span<const float> v) {
  begin_array(key, GgufType::f32, v.size());
  for (float x : v) append_le(kv_, float_bits(x), 4);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne,
                            std::span<const std::byte> data) {
  check(!name.empty() && name.size() <= kMaxTensorName, "GGUF writer: tensor name '", name,
        "' must have 1 to ", kMaxTensorName, " bytes");
  for (const Tensor& t : tensors_) check(t.name != name, "GGUF writer: duplicate tensor ", name);
  check(!ne.empty() && ne.size() <= kMaxDims, "GGUF writer: tensor ", name, ": ", ne.size(),
        " dimensions");
  check(ne[0] % ggml_block_size(type) == 0, "GGUF writer: tensor ", name, ": rows of ", ne[0],
        " are not whole blocks of ", ggml_type_name(static_cast<uint32_t>(type)));
  uint64_t bytes = ne[0] / ggml_block_size(type) * ggml_block_bytes(type);
  for (size_t d = 1; d < ne.size(); ++d) {
    check(mul_ok(bytes, ne[d], bytes), "GGUF writer: tensor ", name, ": dimensions overflow");
  }
  check(bytes == data.size(), "GGUF writer: tensor ", name, ": ", data.size(),
        " bytes of data for ", bytes, " bytes of ", ggml_type_name(static_cast<uint32_t>(type)),
        " ", dims_str(ne));
  tensors_.push_back({name, type, std::move(ne), data});
}

std::vector<std::byte> GgufWriter::header() const {
  std::vector<std::byte> out;
  out.insert(out.end(), {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
  append_le(out, kVersion, 4);
  append_le(out, tensors_.size(), 8);
  append_le(out, n_kv_, 8);
  out.insert(out.end(), kv_.begin(), kv_.end());
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_str(out, t.name);
    append_le(out, t.ne.size(), 4);
    for (uint64_t d : t.ne) append_le(out, d, 8);
    append_le(out, static_cast<uint32_t>(t.type), 4);
    append_le(out, offset, 8);
    offset += padded(t.data.size());
  }
  out.resize(padded(out.size()), std::byte{0});
  return out;
}

uint64_t GgufWriter::padded(uint64_t n) const {
  return (n + alignment_ - 1) / alignment_ * alignment_;
}

std::vector<std::byte> GgufWriter::bytes() const {
  std::vector<std::byte> out = header();
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(padded(out.size()), std::byte{0});  // every tensor padded, the last one too
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  AtomicFile f(path);
  f.write(header());
  const std::vector<std::byte> zeros(alignment_, std::byte{0});
  for (const Tensor& t : tensors_) {
    f.write(t.data);
    f.write(std::span(zeros).first(padded(t.data.size()) - t.data.size()));
  }
  f.commit();
}

}  // namespace tinylm::io
