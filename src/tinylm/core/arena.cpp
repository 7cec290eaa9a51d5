#include "tinylm/core/arena.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tinylm/core/error.h"

namespace tinylm {

void Arena::FreeDeleter::operator()(std::byte* p) const { std::free(p); }

Arena::Arena(size_t capacity_bytes) {
  capacity_ = (capacity_bytes + kAlign - 1) / kAlign * kAlign;
  if (capacity_ == 0) return;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, capacity_));
  check(p != nullptr, "[Arena] cannot allocate ", capacity_, " bytes");
  std::memset(p, 0, capacity_);  // touch every page now, not in the first timed step
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
