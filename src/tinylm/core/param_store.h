#pragma once
// All trainable parameters of a model live in one flat buffer in the family's canonical
// order; named, shaped views point into it. Gradients and optimizer moments mirror the same
// layout, so optimizers, checks and checkpoint writers work on flat spans.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tinylm/core/tensor.h"

namespace tinylm {

// What a parameter is for, so optimizers can treat kinds differently (AdamW decays the
// weights of linear maps by default, not embeddings, norm gains or biases).
enum class ParamRole : uint8_t { matrix, embedding, norm, bias };

struct ParamEntry {
  std::string name;
  Shape shape;
  size_t offset = 0;  // in elements, into the flat buffer
  size_t numel = 0;
  ParamRole role = ParamRole::matrix;
};

class ParamLayout {
 public:
  // align: each tensor starts at a multiple of this many elements (1: packed, as files and the
  // CPU hold them; a device may need its tensors' starts aligned), the gaps zero-filled by
  // whoever fills the buffer.
  explicit ParamLayout(size_t align = 1) : align_(align) {}
  size_t alignment() const { return align_; }
  // Appends a tensor after the existing ones; names must be unique.
  const ParamEntry& add(std::string name, Shape shape, ParamRole role = ParamRole::matrix);
  const ParamEntry& at(std::string_view name) const;  // throws Error if absent
  const ParamEntry* find(std::string_view name) const;
  const std::vector<ParamEntry>& entries() const { return entries_; }
  size_t size() const { return total_; }  // total element count

 private:
  std::vector<ParamEntry> entries_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in entries_
  size_t total_ = 0;
  size_t align_ = 1;
};

// A flat buffer of T laid out by a ParamLayout.
template <class T>
class ParamStore {
 public:
  ParamStore() = default;
  explicit ParamStore(ParamLayout layout) : layout_(std::move(layout)), data_(layout_.size()) {}

  const ParamLayout& layout() const { return layout_; }
  std::span<T> flat() { return data_; }
  std::span<const T> flat() const { return data_; }
  TensorView<T> view(std::string_view name) {
    const ParamEntry& e = layout_.at(name);
    return {data_.data() + e.offset, e.shape};
  }
  TensorView<const T> view(std::string_view name) const {
    const ParamEntry& e = layout_.at(name);
    return {data_.data() + e.offset, e.shape};
  }
  void zero() { std::fill(data_.begin(), data_.end(), T{}); }

 private:
  ParamLayout layout_;
  std::vector<T> data_;
};

}  // namespace tinylm
