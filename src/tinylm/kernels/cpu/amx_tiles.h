#pragma once
// What the AMX kernels (matmul/bf16_amx.cpp, quant/int_amx.cpp) share: LDTILECFG's operand, and
// the fence their tile loads and stores need.
#include <atomic>
#include <cstdint>

namespace tinylm::kernels {

// LDTILECFG's 64-byte operand, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  void set(int t, int nrows, int bytes_per_row) {
    rows[t] = static_cast<uint8_t>(nrows);
    colsb[t] = static_cast<uint16_t>(bytes_per_row);
  }
};

// LDTILECFG with the whole operand as its input: GCC's _tile_loadconfig tells the compiler it
// reads only the first 8 bytes, so the stores that set the rest could be dropped or sunk past it
// (the next tile instruction then faults).
inline void load_tile_config(const TileConfig& c) { asm volatile("ldtilecfg %0" : : "m"(c)); }

// GCC's tile intrinsics are asm statements that do not tell the compiler they read or write
// memory: a fence before the tile loads and after the tile stores keeps the plain accesses of
// the same buffers in order.
inline void tile_fence() { std::atomic_signal_fence(std::memory_order_seq_cst); }

}  // namespace tinylm::kernels
