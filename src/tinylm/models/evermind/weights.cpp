#include "tinylm/models/evermind/weights.h"

#include <algorithm>

#include "tinylm/core/error.h"

namespace tinylm::evermind {

ParamIndex::ParamIndex(const Config& c) {
  const ParamLayout layout = param_layout(c);
  for_each_tensor(c, *this,
                  [&](const TensorSpec& t, size_t& offset) { offset = layout.at(t.name).offset; });
}

template <class T>
void PackedWeights<T>::pack(const ParamLayout& layout, std::span<const T> params) {
  check(params.size() == layout.size() && data_.size() == layout.size(),
        "evermind: packed weights do not match the parameter layout");
  for (const ParamEntry& e : layout.entries()) {
    const T* src = params.data() + e.offset;
    T* dst = data_.data() + e.offset;
    if (e.shape.size() != 2) {
      std::copy(src, src + e.numel, dst);
      continue;
    }
    const int64_t rows = e.shape[0], cols = e.shape[1];
    // Blocks of 16 × 16 keep both sides within a few cache lines; writes run contiguously.
    constexpr int64_t B = 16;
    for (int64_t r0 = 0; r0 < rows; r0 += B) {
      for (int64_t c0 = 0; c0 < cols; c0 += B) {
        for (int64_t c = c0; c < std::min(cols, c0 + B); ++c) {
          for (int64_t r = r0; r < std::min(rows, r0 + B); ++r)
            dst[c * rows + r] = src[r * cols + c];
        }
      }
    }
  }
}

template class PackedWeights<float>;
template class PackedWeights<double>;

}  // namespace tinylm::evermind
