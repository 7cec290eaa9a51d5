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

// The storage behind AlignedVector and core/arena.h: 64-byte aligned, and from `huge_from`
// bytes up on 2 MiB boundaries with MADV_HUGEPAGE. Release with the same bytes and huge_from.
inline constexpr size_t kHugePage = size_t{2} << 20;
inline std::align_val_t storage_alignment(size_t bytes, size_t huge_from) {
  return std::align_val_t{bytes >= huge_from && bytes >= kHugePage ? kHugePage : 64};
}
inline void* allocate_storage(size_t bytes, size_t huge_from) {  // throws std::bad_alloc
  const std::align_val_t align = storage_alignment(bytes, huge_from);
  void* p = ::operator new(bytes, align);
  if (align == std::align_val_t{kHugePage})
    madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint; failure is harmless
  return p;
}
inline void release_storage(void* p, size_t bytes, size_t huge_from) noexcept {
  ::operator delete(p, storage_alignment(bytes, huge_from));
}

template <class T>
struct AlignedAllocator {
  using value_type = T;

  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit

  T* allocate(size_t n) { return static_cast<T*>(allocate_storage(n * sizeof(T), kHugePage)); }
  void deallocate(T* p, size_t n) noexcept { release_storage(p, n * sizeof(T), kHugePage); }
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
