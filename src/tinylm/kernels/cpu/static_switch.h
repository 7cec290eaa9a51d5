#pragma once
// A run-time count turned into a template argument: kernels whose register tiles are sized at
// compile time (rows of a tile, vectors of a head) pick the instance for the count in hand.
#include <cstdint>
#include <utility>

namespace tinylm::kernels {

// Calls f.template operator()<N>() for N == n if n is in [Lo, Hi]; returns whether it did.
template <int Lo, int Hi, class F>
inline bool static_switch(int64_t n, F&& f) {
  if constexpr (Lo <= Hi) {
    if (n == Lo) {
      f.template operator()<Lo>();
      return true;
    }
    return static_switch<Lo + 1, Hi>(n, std::forward<F>(f));
  }
  return false;
}

}  // namespace tinylm::kernels
