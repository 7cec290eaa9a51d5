#include "tinylm/core/arena.h"

#include <cstdint>
#include <cstring>
#include <new>

#include "tinylm/core/aligned_vector.h"
#include "tinylm/core/error.h"

namespace tinylm {

// Large arenas (a training batch's activations: gigabytes for nanoGPT's baby GPT) on 2 MiB
// pages: the kernels stream through them, and with 4 KiB pages their TLB misses cost a few
// percent of a step. Smaller arenas stay within the TLB's reach. (On VMs that hand freed
// memory back to the host, as ours do, first-touching huge pages is the slower start:
// docs/performance.md.)
constexpr size_t kHugeFrom = size_t{64} << 20;

void Arena::Release::operator()(std::byte* p) const { release_storage(p, bytes, kHugeFrom); }

Arena::Arena(size_t capacity_bytes) {
  capacity_ = (capacity_bytes + kAlign - 1) / kAlign * kAlign;
  if (capacity_ == 0) return;
  std::byte* p = nullptr;
  try {
    p = static_cast<std::byte*>(allocate_storage(capacity_, kHugeFrom));
  } catch (const std::bad_alloc&) {
    fail("[Arena] cannot allocate ", capacity_, " bytes");
  }
  std::memset(p, 0, capacity_);  // touch every page now, not in the first timed step
  base_ = std::unique_ptr<std::byte, Release>(p, Release{capacity_});
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
