#pragma once
// The quantized products' software prefetch: each output's row of blocks is its own sequential
// stream, fetched into L2 kAhead bytes ahead, one cache line at a time (the line where a piece's
// share of the block's bytes starts, once). The hardware prefetchers alone kept too few lines in
// flight for interleaved streams of 34- or 18-byte blocks.
//
// Include only from kernel sources, after kernels/cpu/vec.h.
#include <cstdint>

#include "tinylm/kernels/cpu/level.h"
#include "tinylm/kernels/quant/blocks.h"

TINYLM_LEVEL_BEGIN

// Pieces of 32 weights a block: 1, or 8 for Q6_K's 256.
template <class Block>
constexpr int kPieces = static_cast<int>(kWeights<Block> / kQuantBlock);

constexpr int64_t kAhead = 16384, kLine = 64;

template <class Block>
TINYLM_INLINE void prefetch_piece(const Block* block, int piece) {
  constexpr int64_t kShare = sizeof(Block) / kPieces<Block>;
  const char* p = reinterpret_cast<const char*>(block) + piece * kShare + kAhead;
  if ((reinterpret_cast<uintptr_t>(p) & (kLine - 1)) < kShare) __builtin_prefetch(p, 0, 2);
}

TINYLM_LEVEL_END
