#pragma once
// Non-owning tensor views: a pointer, a dtype and a row-major shape. Storage is owned
// elsewhere (a ParamStore, an Arena, a mapped file); views are cheap to copy.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"

namespace tinylm {

using Shape = std::vector<int64_t>;

// Product of the dimensions; throws on a negative dimension or int64 overflow.
int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[3, 4]"

template <class T>
struct TensorView {
  T* data = nullptr;
  Shape shape;

  int64_t numel() const { return shape_numel(shape); }
  int64_t dim(size_t i) const { return shape.at(i); }
  std::span<T> span() const { return {data, static_cast<size_t>(numel())}; }
  // Row i of a 2-D view.
  std::span<T> row(int64_t i) const { return {data + i * shape[1], static_cast<size_t>(shape[1])}; }
};

}  // namespace tinylm
