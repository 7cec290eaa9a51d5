#pragma once
// Where a register tile's sums go in the chunked products (stream.cpp, bf16_dot.cpp): each
// chunk's chains are added to the sums so far, from[r * ldf + c], and written to
// to[r * ldt + c]. Every chunk but the last reads and writes an item's own block; the last
// writes y, so that no pass of its own copies the block out.
#include <cstdint>

namespace tinylm::kernels {

struct TileSums {
  const float* from;
  int64_t ldf;
  float* to;
  int64_t ldt;
  // The same sums from row r and column c on.
  TileSums at(int64_t r, int64_t c) const {
    return {from + r * ldf + c, ldf, to + r * ldt + c, ldt};
  }
  // In place: a block's rows ld apart.
  static TileSums in(float* block, int64_t ld) { return {block, ld, block, ld}; }
};

}  // namespace tinylm::kernels
