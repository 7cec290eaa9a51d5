#include "tinylm/io/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/little_endian.h"
#include "tinylm/io/mapped_file.h"
#include "tinylm/kernels/cast/cast.h"

namespace tinylm::io {

namespace {
constexpr uint64_t kMaxHeader = 100'000'000;

struct DtypeInfo {
  const char* name;
  size_t size;
};
constexpr DtypeInfo kDtypes[] = {{"BOOL", 1},    {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1},
                                 {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
                                 {"BF16", 2},    {"I32", 4}, {"U32", 4}, {"F32", 4},
                                 {"F64", 8},     {"I64", 8}, {"U64", 8}};

}  // namespace

size_t safetensors_dtype_size(const std::string& dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (dtype == d.name) return d.size;
  }
  return 0;
}

void SafetensorsFile::populate(const SafetensorsEntry& e) const { storage_->populate(bytes(e)); }

void SafetensorsFile::parse() {
  const std::string& p = path();
  check(file_.size() >= 8, p, ": file too short for a safetensors header (", file_.size(),
        " bytes)");
  const uint64_t n = get_le(file_.data(), 8);
  check(n <= kMaxHeader, p, ": header length ", n, " exceeds the 100 MB limit");
  check(n <= file_.size() - 8, p, ": header length ", n, " runs past the end of the file (",
        file_.size(), " bytes)");
  check(n >= 2, p, ": header too short to hold a JSON object");
  const std::string_view header(reinterpret_cast<const char*>(file_.data() + 8), n);
  check(header[0] == '{', p, ": header does not start with '{'");
  const nlohmann::ordered_json j = parse_json_strict(header, p + ": header");
  check(j.is_object(), p, ": header is not a JSON object");
  data_ = file_.subspan(8 + n);

  for (const auto& [name, value] : j.items()) {
    if (name == "__metadata__") {
      check(value.is_object(), p, ": __metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        check(v.is_string(), p, ": __metadata__ value of '", k, "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string where = p + ": tensor " + name;
    check(value.is_object(), where, ": entry is not an object");
    SafetensorsEntry e;
    e.name = name;
    for (const auto& [k, v] : value.items()) {
      check(k == "dtype" || k == "shape" || k == "data_offsets", where, ": unexpected field '", k,
            "'");
    }
    check(value.contains("dtype") && value["dtype"].is_string(), where,
          ": missing or non-string dtype");
    e.dtype = value["dtype"].get<std::string>();
    const size_t esize = safetensors_dtype_size(e.dtype);
    check(esize != 0, where, ": unknown dtype '", e.dtype, "'");
    check(value.contains("shape") && value["shape"].is_array(), where,
          ": missing or invalid shape");
    uint64_t numel = 1;
    for (const auto& d : value["shape"]) {
      check(d.is_number_unsigned(), where, ": shape entries must be non-negative integers");
      const uint64_t dim = d.get<uint64_t>();
      check(dim <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), where,
            ": dimension too large");
      check(dim == 0 || numel <= std::numeric_limits<uint64_t>::max() / dim, where,
            ": shape overflows");
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    check(numel <= std::numeric_limits<uint64_t>::max() / esize, where, ": byte size overflows");
    const auto& offs =
        value.contains("data_offsets") ? value["data_offsets"] : nlohmann::ordered_json();
    check(offs.is_array() && offs.size() == 2 && offs[0].is_number_unsigned() &&
              offs[1].is_number_unsigned(),
          where, ": data_offsets must be two non-negative integers");
    const uint64_t b = offs[0].get<uint64_t>(), en = offs[1].get<uint64_t>();
    check(b <= en, where, ": data_offsets begin ", b, " is after end ", en);
    check(en <= data_.size(), where, ": data_offsets [", b, ", ", en, ") exceed the data section (",
          data_.size(), " bytes)");
    check(en - b == numel * esize, where, ": data_offsets span ", en - b, " bytes but shape ",
          shape_str(e.shape), " of ", e.dtype, " needs ", numel * esize);
    e.begin = b;
    e.end = en;
    entries_.push_back(std::move(e));
  }

  // The byte ranges, sorted by start, must tile the data section with no gap or overlap.
  std::vector<const SafetensorsEntry*> sorted;
  for (const auto& e : entries_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  size_t pos = 0;
  for (const SafetensorsEntry* e : sorted) {
    check(e->begin >= pos, p, ": tensor ", e->name,
          ": data overlaps the previous tensor (starts at ", e->begin, ", previous ends at ", pos,
          ")");
    check(e->begin == pos, p, ": tensor ", e->name, ": gap in the data section before offset ",
          e->begin);
    pos = e->end;
  }
  check(pos == data_.size(), p, ": ", data_.size() - pos,
        " bytes of data after the last tensor are not described by the header");
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::bytes(const SafetensorsEntry& e) const {
  return data_.subspan(e.begin, e.end - e.begin);
}

const SafetensorsEntry& SafetensorsFile::entry_checked(const std::string& name,
                                                       const Shape& want) const {
  const SafetensorsEntry* e = find(name);
  check(e != nullptr, path(), ": missing tensor ", name);
  check(want.empty() || e->shape == want, path(), ": tensor ", name, ": shape ",
        shape_str(e->shape), ", expected ", shape_str(want));
  return *e;
}

namespace {
// Element i of a little-endian buffer, copied out so unaligned data is fine.
template <class U>
U load(const std::byte* p, size_t i) {
  U v;
  std::memcpy(&v, p + i * sizeof(U), sizeof(U));
  return v;
}

template <class Out>
std::vector<Out> convert(const SafetensorsEntry& e, std::span<const std::byte> b,
                         const std::string& path) {
  const size_t n = b.size() / safetensors_dtype_size(e.dtype);
  std::vector<Out> out(n);
  const std::byte* p = b.data();
  if (e.dtype == "F64") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<double>(p, i));
  } else if (e.dtype == "F32") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<float>(p, i));
  } else if (e.dtype == "F16") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(f16_to_float(load<uint16_t>(p, i)));
  } else if (e.dtype == "BF16") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(bf16_to_float(load<uint16_t>(p, i)));
  } else {
    fail(path, ": tensor ", e.name, ": dtype ", e.dtype,
         " is not a floating-point type tinylm reads");
  }
  return out;
}
}  // namespace

std::vector<double> SafetensorsFile::read_f64(const std::string& name, const Shape& want) const {
  const SafetensorsEntry& e = entry_checked(name, want);
  return convert<double>(e, bytes(e), path());
}

std::vector<float> SafetensorsFile::read_f32(const std::string& name, const Shape& want) const {
  const SafetensorsEntry& e = entry_checked(name, want);
  return convert<float>(e, bytes(e), path());
}

void SafetensorsFile::read_f32_into(const std::string& name, std::span<float> out,
                                    const Shape& want) const {
  read_into(name, DType::f32, out.data(), out.size(), want);
}

void SafetensorsFile::read_into(const std::string& name, DType dtype, void* out, size_t numel,
                                const Shape& want, DropPages drop) const {
  const SafetensorsEntry& e = entry_checked(name, want);
  const size_t n = bytes(e).size() / safetensors_dtype_size(e.dtype);
  check(numel == n, path(), ": tensor ", name, ": ", n, " elements, destination holds ", numel);
  read_range_into(name, dtype, out, 0, n, drop);
}

void SafetensorsFile::read_range_into(const std::string& name, DType dtype, void* out, size_t first,
                                      size_t elements, DropPages drop) const {
  const SafetensorsEntry& e = entry_checked(name, {});
  const size_t total = bytes(e).size() / safetensors_dtype_size(e.dtype);
  check(first <= total && elements <= total - first, path(), ": tensor ", name, ": elements [",
        first, ", ", first + elements, ") of ", total);
  const std::span<const std::byte> b = bytes(e).subspan(first * safetensors_dtype_size(e.dtype),
                                                        elements * safetensors_dtype_size(e.dtype));
  const size_t n = elements;
  const std::string_view want_name = dtype == DType::f32    ? "F32"
                                     : dtype == DType::bf16 ? "BF16"
                                     : dtype == DType::f16  ? "F16"
                                                            : "";
  check(!want_name.empty(), path(), ": tensor ", name, ": cannot convert to ", dtype_name(dtype));
  check(e.dtype == "F32" || e.dtype == "F16" || e.dtype == "BF16" || e.dtype == "F64", path(),
        ": tensor ", e.name, ": dtype ", e.dtype, " is not a floating-point type tinylm reads");
  // Drops the whole pages of source bytes [0, upto) not dropped yet.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t dropped = (reinterpret_cast<uintptr_t>(b.data()) + page - 1) / page * page;
  const auto drop_upto = [&](size_t upto) {
    if (drop == DropPages::No || !storage_->mapped()) return;
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(b.data()) + upto) / page * page;
    if (hi > dropped) madvise(reinterpret_cast<void*>(dropped), hi - dropped, MADV_DONTNEED);
    dropped = std::max(dropped, hi);
  };
  const size_t in_size = safetensors_dtype_size(e.dtype), out_size = dtype_size(dtype);
  constexpr size_t kDropEvery = size_t{4} << 20;  // source bytes between madvise calls
  if (e.dtype == want_name) {
    for (size_t off = 0; off < b.size(); off += kDropEvery) {
      const size_t m = std::min(kDropEvery, b.size() - off);
      std::memcpy(static_cast<std::byte*>(out) + off, b.data() + off, m);
      drop_upto(off + m);
    }
    return;
  }
  // Through f32 in cache-sized chunks (the source may be unaligned: copied first).
  constexpr size_t kChunk = 4096;
  float buf[kChunk];
  for (size_t i0 = 0; i0 < n; i0 += kChunk) {
    const size_t m = std::min(kChunk, n - i0);
    const std::byte* p = b.data();
    if (e.dtype == "F32") {
      std::memcpy(buf, p + i0 * 4, m * 4);
    } else if (e.dtype == "F16" || e.dtype == "BF16") {
      uint16_t h[kChunk];
      std::memcpy(h, p + i0 * 2, m * 2);
      const auto count = static_cast<int64_t>(m);
      if (e.dtype == "F16")
        kernels::convert(reinterpret_cast<const kernels::F16*>(h), buf, count);
      else
        kernels::convert(reinterpret_cast<const kernels::Bf16*>(h), buf, count);
    } else {  // F64
      for (size_t i = 0; i < m; ++i) buf[i] = static_cast<float>(load<double>(p, i0 + i));
    }
    std::byte* dst = static_cast<std::byte*>(out) + i0 * out_size;
    if (dtype == DType::f32) {
      std::memcpy(dst, buf, m * 4);
    } else if (dtype == DType::bf16) {
      kernels::convert(buf, reinterpret_cast<kernels::Bf16*>(dst), static_cast<int64_t>(m));
    } else {
      kernels::convert(buf, reinterpret_cast<kernels::F16*>(dst), static_cast<int64_t>(m));
    }
    if ((i0 + m) * in_size / kDropEvery != i0 * in_size / kDropEvery || i0 + m == n)
      drop_upto((i0 + m) * in_size);
  }
}

void write_safetensors(const std::string& path, std::span<const SafetensorsWriteEntry> tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  size_t offset = 0;
  for (const auto& t : tensors) {
    check(names.insert(t.name).second, path, ": duplicate tensor name ", t.name);
    check(t.name != "__metadata__", path, ": a tensor cannot be named __metadata__");
    const size_t esize = safetensors_dtype_size(t.dtype);
    check(esize != 0, path, ": tensor ", t.name, ": unknown dtype ", t.dtype);
    check(t.data.size() == static_cast<size_t>(shape_numel(t.shape)) * esize, path, ": tensor ",
          t.name, ": data size does not match shape ", shape_str(t.shape));
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string h = header.dump();
  // Pads the header with spaces (the format allows it) so that the data section starts on a
  // 64-byte file offset: tensors whose sizes are multiples of 64 bytes (all of GPT-2's) are
  // then cache-line aligned when the file is memory-mapped and used in place.
  h.append((64 - (8 + h.size()) % 64) % 64, ' ');
  AtomicFile out(path);
  std::vector<std::byte> len;
  append_le(len, h.size(), 8);
  out.write(len);
  out.write(std::as_bytes(std::span(h.data(), h.size())));
  for (const auto& t : tensors) out.write(t.data);
  out.commit();
}

}  // namespace tinylm::io
