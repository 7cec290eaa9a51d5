// libFuzzer target: arbitrary bytes into SafetensorsFile::from_bytes. Rejection must be a
// tinylm::Error; anything else (another exception, a sanitizer report, a broken invariant)
// crashes so the fuzzer reports it. When the file parses, every floating-point tensor is read.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/io/safetensors.h"

namespace {

bool is_float_dtype(const std::string& d) {
  return d == "F32" || d == "F16" || d == "BF16" || d == "F64";
}

void require(bool cond) {
  if (!cond) std::abort();
}

// What a successful parse promises: every entry has a known dtype, a byte range matching
// its shape inside the data section, and the ranges tile the data section.
void check_invariants(const tinylm::io::SafetensorsFile& f, size_t input_size) {
  size_t total = 0;
  for (const tinylm::io::SafetensorsEntry& e : f.entries()) {
    const size_t esize = tinylm::io::safetensors_dtype_size(e.dtype);
    require(esize != 0);
    require(e.begin <= e.end);
    size_t numel = 1;
    for (int64_t d : e.shape) {
      require(d >= 0);
      numel *= static_cast<size_t>(d);  // cannot overflow when the bytes exist (or d == 0)
    }
    const std::span<const std::byte> b = f.bytes(e);
    require(b.size() == e.end - e.begin);
    require(numel == 0 || b.size() == numel * esize);
    require(f.find(e.name) == &e);
    total += b.size();
  }
  require(total <= input_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tinylm::io::SafetensorsFile f = tinylm::io::SafetensorsFile::from_bytes(
        std::as_bytes(std::span(data, size)), "fuzz.safetensors");
    check_invariants(f, size);
    for (const tinylm::io::SafetensorsEntry& e : f.entries()) {
      if (is_float_dtype(e.dtype)) {
        const std::vector<double> v = f.read_f64(e.name, e.shape);
        require(v.size() * tinylm::io::safetensors_dtype_size(e.dtype) == e.end - e.begin);
      } else {
        // Reading a non-float tensor must be refused with an Error.
        try {
          (void)f.read_f64(e.name);
          std::abort();
        } catch (const tinylm::Error&) {
        }
      }
    }
  } catch (const tinylm::Error&) {
    // A rejected file: the expected outcome for most inputs.
  }
  return 0;
}
