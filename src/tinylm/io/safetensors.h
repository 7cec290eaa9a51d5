#pragma once
// safetensors (Hugging Face): an 8-byte little-endian header length N, N bytes of JSON
// describing each tensor's dtype, shape and [begin, end) byte range, then the data.
// The reader memory-maps the file and validates every rule before any tensor is touched:
// header size, JSON, duplicate names, known dtypes, shapes, overflow-checked byte sizes,
// and offsets that tile the data section exactly. Errors name the file, the tensor and
// the problem. Writers go through a temporary file and a rename.
#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/tensor.h"
#include "tinylm/io/mapped_file.h"

namespace tinylm::io {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as in the file: "F32", "BF16", ...
  Shape shape;
  size_t begin = 0;  // byte offsets into the data section
  size_t end = 0;
};

// Made by SafetensorsFile::open(path) or SafetensorsFile::from_bytes(image, name)
// (io/mapped_file.h).
class SafetensorsFile : public FileReader<SafetensorsFile> {
 public:
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // file order
  const SafetensorsEntry* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The raw bytes of a tensor (possibly unaligned for its element type).
  std::span<const std::byte> bytes(const SafetensorsEntry& e) const;
  // A tensor converted to f64 / f32 (from F64, F32, F16 or BF16); throws for other dtypes.
  // `want` checks the shape when non-empty.
  std::vector<double> read_f64(const std::string& name, const Shape& want = {}) const;
  std::vector<float> read_f32(const std::string& name, const Shape& want = {}) const;
  // The same into `out`, whose size must be the tensor's element count (no allocation).
  void read_f32_into(const std::string& name, std::span<float> out, const Shape& want = {}) const;
  // A tensor converted to `dtype` (f32, bf16 or f16; rounding to nearest even) into `out`,
  // which holds `numel` elements of it; the same dtype is copied bit for bit. With
  // DropPages::Yes the mapped pages of the source are dropped as the copy passes them (they
  // are re-read from the file if touched again), so a converting load never holds a large
  // tensor twice: peak memory stays near the converted weights. No effect on in-memory images.
  // Maps the pages of a tensor of a mapped file into memory now (reading the file where it is
  // not cached), so that the first pass over a tensor used in place pays no page faults. No
  // effect on in-memory images.
  void populate(const SafetensorsEntry& e) const;

  enum class DropPages : bool { No, Yes };
  void read_into(const std::string& name, DType dtype, void* out, size_t numel,
                 const Shape& want = {}, DropPages drop = DropPages::No) const;
  // Elements [first, first + count) of tensor `name`, converted to `dtype` into out (a part of a
  // large tensor, so a reader never holds all of it converted).
  void read_range_into(const std::string& name, DType dtype, void* out, size_t first, size_t count,
                       DropPages drop = DropPages::No) const;

 private:
  friend class FileReader<SafetensorsFile>;
  void parse();
  const SafetensorsEntry& entry_checked(const std::string& name, const Shape& want) const;

  std::span<const std::byte> data_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Size in bytes of one element of a safetensors dtype name, or 0 when unknown.
size_t safetensors_dtype_size(const std::string& dtype);

struct SafetensorsWriteEntry {
  std::string name;
  std::string dtype;
  Shape shape;
  std::span<const std::byte> data;
};

// Writes tensors in the given order with the given metadata, atomically.
void write_safetensors(const std::string& path, std::span<const SafetensorsWriteEntry> tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace tinylm::io
