#pragma once
// Where each EvermindLM tensor sits in the flat parameter buffer, and the transposed copies
// the forward reads (a linear layer's forward multiplies by Wᵀ; keeping Wᵀ row-major makes
// its products run along contiguous rows).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tinylm/core/param_store.h"
#include "tinylm/models/evermind/config.h"
#include "tinylm/models/evermind/tensors.h"

namespace tinylm::evermind {

// A buffer the size of the parameters in which every 2-D tensor [rows × cols] is stored
// transposed, [cols × rows], at the same offset as in the parameters (1-D tensors are
// copied). So "the transpose of tensor X" is at ParamIndex's (tensors.h) offset of X.
template <class T>
class PackedWeights {
 public:
  PackedWeights() = default;
  explicit PackedWeights(const ParamLayout& layout) : data_(layout.size()) {}
  // Refreshes every copy from params (laid out by `layout`).
  void pack(const ParamLayout& layout, std::span<const T> params);
  const T* data() const { return data_.data(); }

 private:
  std::vector<T> data_;
};

}  // namespace tinylm::evermind
