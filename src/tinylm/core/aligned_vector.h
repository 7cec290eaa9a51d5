#pragma once
// std::vector storage for large weight arrays that kernels stream from memory: 64-byte
// aligned (a cache line, one AVX-512 register), so no load straddles two cache lines, and
// from 2 MiB up on huge-page boundaries with MADV_HUGEPAGE, so streaming them costs few TLB
// misses. resize() leaves trivial elements uninitialized: the owner fills them right after
// (zeroing 250 MB of weights first would cost a pass over memory).
#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <vector>

namespace tinylm {

template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit

  static std::align_val_t alignment(size_t bytes) {
    return std::align_val_t{bytes >= kHuge ? kHuge : 64};
  }
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = ::operator new(bytes, alignment(bytes));
    if (bytes >= kHuge)
      madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);  // a hint; failure is harmless
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { ::operator delete(p, alignment(n * sizeof(T))); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialization: no zeroing pass
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace tinylm
