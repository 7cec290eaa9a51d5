#pragma once
// GGUF v3 (ggml / llama.cpp), little-endian: magic "GGUF", u32 version, u64 tensor count, u64
// key/value count, the key/values, the tensor infos (name, u32 n_dims, u64 ne[n_dims] with
// ne[0] the fastest-varying, u32 ggml type, u64 offset), then the data section at the next
// multiple of general.alignment (default 32), every tensor's offset a multiple of it.
//
// The reader memory-maps the file and checks everything before use: every count, string
// length and array length against the bytes left (so a huge count is an error, not an
// allocation), value and tensor types, dimensions (overflow-checked), duplicate keys and
// tensor names, alignment, offsets inside the data section and tensors that overlap. Errors
// are one line naming the file, the key or tensor, and the problem. The io layer knows tensor
// types only by their block size and bytes, those of the DType each is in tinylm: F32, F16,
// Q8_0, Q4_0, Q4_K, Q5_K and Q6_K are supported; any other is refused by name. The writer writes
// through an AtomicFile.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/io/mapped_file.h"

namespace tinylm::io {

// GGUF key/value types, numbered as in the file.
enum class GgufType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
std::string_view gguf_type_name(GgufType t);  // "u32", "string", ...

// The ggml tensor types tinylm reads (and, but the k-quants, writes), numbered as in the file.
// Q6_K is what llama.cpp's quantizer gives a tied token_embd in its Q4_0 files; its Q4_K_M and
// Q5_K_M files mix Q4_K, Q5_K and Q6_K.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q8_0 = 8,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14
};
// "F32", "F16", "Q4_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K"; for other numbers ggml's name ("Q2_K",
// "BF16", ...) or "type N".
std::string ggml_type_name(uint32_t type);
bool ggml_type_supported(uint32_t type);
// The element type a tensor of type t is in tinylm (f32, f16, q8_0, ...): its block size and
// bytes are the file's.
DType ggml_dtype(GgmlType t);
// llama.cpp's general.file_type (LLAMA_FTYPE_*) of a file whose weights are of type t (the
// k-quants: their _S files).
uint32_t ggml_file_type(GgmlType t);
// Elements per block (1 for F32/F16, 32 for Q8_0/Q4_0, 256 for the k-quants) and bytes per
// block (4, 2, 34, 18, 144, 176, 210).
uint64_t ggml_block_size(GgmlType t);
uint64_t ggml_block_bytes(GgmlType t);

// One value: a scalar (one element), a string, or an array of scalars or strings.
struct GgufValue {
  GgufType type = GgufType::u8;
  GgufType elem = GgufType::u8;  // arrays: the element type; otherwise == type
  // Integers and booleans (signed ones as their two's-complement bits), floats (f32 widened),
  // strings: one entry for a scalar, count entries for an array, in the member of its kind.
  std::vector<uint64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;

  bool is_array() const { return type == GgufType::array; }
  size_t size() const;  // elements (1 for a scalar)
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::f32;
  std::vector<uint64_t> ne;  // ne[0] fastest-varying (the reverse of a row-major shape)
  uint64_t offset = 0;       // bytes from the start of the data section
  uint64_t numel = 0;
  uint64_t bytes = 0;
};

// Made by GgufFile::open(path) or GgufFile::from_bytes(image, name) (io/mapped_file.h).
class GgufFile : public FileReader<GgufFile> {
 public:
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  // Key/values in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;  // null when absent
  // Typed reads: a missing key or a value of another kind is an Error naming the key.
  // get_uint accepts any integer type holding a value >= 0; get_float f32 or f64.
  uint64_t get_uint(const std::string& key) const;
  double get_float(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const GgufValue& get_array(const std::string& key, GgufType elem) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }  // file order
  const GgufTensor* find_tensor(const std::string& name) const;
  // The tensor's bytes, inside the mapping (aligned to alignment() within the file).
  std::span<const std::byte> data(const GgufTensor& t) const;
  // Reads the mapped pages of `t` now (no effect on in-memory images).
  void populate(const GgufTensor& t) const;
  // Keeps the file's bytes alive (for tensors used in place).
  std::shared_ptr<const void> owner() const { return storage_; }

 private:
  friend class FileReader<GgufFile>;
  void parse();

  std::span<const std::byte> data_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Builds a GGUF v3 file: key/values and tensors in the order added. Tensor data is not copied:
// it must stay alive until write(). An alignment other than 32 is written as general.alignment.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32);

  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, std::string_view v);
  void add_string_array(const std::string& key, std::span<const std::string> v);
  void add_i32_array(const std::string& key, std::span<const int32_t> v);
  void add_f32_array(const std::string& key, std::span<const float> v);

  // ne[0] fastest-varying; data must hold exactly the tensor's bytes.
  void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne,
                  std::span<const std::byte> data);

  // The whole file's bytes / written atomically to `path`.
  std::vector<std::byte> bytes() const;
  void write(const std::string& path) const;

 private:
  void begin_kv(const std::string& key, GgufType type);
  void add_scalar(const std::string& key, GgufType type, uint64_t bits);  // a number's bits
  void begin_array(const std::string& key, GgufType elem, uint64_t count);
  std::vector<std::byte> header() const;  // up to the data section, padded
  uint64_t padded(uint64_t n) const;

  uint32_t alignment_;
  uint64_t n_kv_ = 0;
  std::vector<std::byte> kv_;  // serialized key/values
  std::vector<std::string> keys_;
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    std::span<const std::byte> data;
  };
  std::vector<Tensor> tensors_;
};

}  // namespace tinylm::io
