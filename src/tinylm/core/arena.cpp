#include "tinylm/core/arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tinylm/core/error.h"

namespace tinylm {

void Arena::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

Arena::Arena(size_t capacity_bytes) {
  capacity_ = (capacity_bytes + kAlign - 1) / kAlign * kAlign;
  if (capacity_ == 0) return;
  // Large arenas (a training batch's activations: gigabytes for nanoGPT's baby GPT) on 2 MiB
  // pages with MADV_HUGEPAGE, as AlignedVector's weights: the kernels stream through them, and
  // with 4 KiB pages their TLB misses cost a few percent of a step. Smaller arenas stay within
  // the TLB's reach. (On VMs that hand freed memory back to the host, as ours do, first-touching
  // huge pages is the slower start: docs/performance.md.)
  constexpr size_t kHuge = size_t{2} << 20, kHugeFrom = size_t{64} << 20;
  const bool huge = capacity_ >= kHugeFrom;
  const size_t align = huge ? kHuge : kAlign;
  const size_t bytes = (capacity_ + align - 1) / align * align;  // aligned_alloc's rule
  auto* p = static_cast<std::byte*>(std::aligned_alloc(align, bytes));
  check(p != nullptr, "[Arena] cannot allocate ", capacity_, " bytes");
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // a hint; failure is harmless
  std::memset(p, 0, capacity_);                // touch every page now, not in the first timed step
  base_.reset(p);
}

void* Arena::alloc_bytes(size_t bytes) {
  // Compare before rounding up: rounding a huge request would wrap around to a small one.
  const size_t left = capacity_ - used_;
  const size_t size = bytes <= SIZE_MAX - kAlign ? (bytes + kAlign - 1) / kAlign * kAlign : bytes;
  check(bytes <= left && size <= left, "[Arena] out of planned memory: need ", size,
        " more bytes, ", capacity_ - used_, " of ", capacity_, " left");
  void* p = base_.get() + used_;
  used_ += size;
  return p;
}

}  // namespace tinylm
