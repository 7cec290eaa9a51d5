#include "tinylm/core/tensor.h"

#include <limits>

namespace tinylm {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    check(d >= 0, "negative dimension in shape ", shape_str(shape));
    check(d == 0 || n <= std::numeric_limits<int64_t>::max() / d, "shape ", shape_str(shape),
          " overflows 64-bit element count");
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace tinylm
