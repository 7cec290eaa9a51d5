#pragma once
// A bump allocator for activations and scratch. Sized once from a plan, touched once at
// creation (first-touch page faults cost ~14 us per 4 KiB page on our VMs; a large arena asks
// for 2 MiB pages), then reset and reused every step: kernels never allocate.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tinylm/core/error.h"

namespace tinylm {

class Arena {
 public:
  static constexpr size_t kAlign = 64;

  Arena() = default;
  explicit Arena(size_t capacity_bytes);

  template <class T>
  std::span<T> alloc(size_t n) {
    check(n <= SIZE_MAX / sizeof(T), "[Arena] allocation of ", n, " elements overflows");
    return {static_cast<T*>(alloc_bytes(n * sizeof(T))), n};
  }
  void* alloc_bytes(size_t bytes);  // throws Error when the plan was too small
  void reset() { used_ = 0; }
  size_t used() const { return used_; }
  size_t capacity() const { return capacity_; }

  // Bytes an allocation of n elements of T takes, alignment included: for planning.
  template <class T>
  static size_t footprint(size_t n) {
    return (n * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  }

 private:
  struct Release {  // (no member initializer: GCC then deems it not default-constructible here)
    size_t bytes;
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Release> base_;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace tinylm
