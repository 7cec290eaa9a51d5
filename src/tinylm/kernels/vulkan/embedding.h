#pragma once
// Token and position embeddings as compute shaders, on device buffers: mirrors
// kernels/embedding/embedding.h's lookup and its backward (the same formula and arguments, with
// the vocabulary size added so the op can check the table's buffer).
//
// Numerics: exact. The forward is one addition per element (none without positions) and the
// table's f16/bf16 values widen exactly; the backward gives each column to one invocation,
// which adds the rows in row order as the CPU kernel does (no atomics). Both give the CPU's
// bits (tests/unit/gpu_embedding_test.cpp), on any device that keeps f32 denormals.
#include <cstdint>
#include <optional>

#include "tinylm/core/dtype.h"
#include "tinylm/kernels/embedding/embedding.h"  // kNoPeriod
#include "tinylm/kernels/vulkan/context.h"

namespace tinylm::kernels::vulkan {

// How the table is stored: (vocab, C), a row per token, or transposed, (C, vocab), a column per
// token (a GPU model's tied head reads it that way: neighbouring invocations then read
// neighbouring words).
enum class TableLayout { rows, transposed };

// x[r] = table[tokens[r]] + positions[first + r % period] (no position term when positions is
// null). x: (rows, C) floats; tokens: (rows) int32, trusted (in [0, vocab)); table: (vocab, C)
// of table_type f32, or f16 or bf16 as uploaded from a host array (two per 32-bit word, the
// even element in the low half; the buffer holds whole words, so an odd count needs 2 bytes
// more); positions: (first + min(rows, period), C) floats at least.
void embedding_forward(Context& context, View x, View tokens, View table, DType table_type,
                       std::optional<View> positions, int64_t rows, int64_t C, int64_t vocab,
                       int64_t first = 0, int64_t period = kNoPeriod,
                       TableLayout layout = TableLayout::rows);

// Rows at positions of their own: x[r] = table[tokens[r]] + positions[where[2r + 1]], where:
// (rows, 2) int32 pairs (slot, position) as attention.h's rows ops take them, on the device, so a
// step replays with new positions. Positions are trusted (in [0, n_positions)); positions:
// (n_positions, C) floats.
void embedding_forward_rows(Context& context, View x, View tokens, View table, DType table_type,
                            TableLayout layout, View positions, View where, int64_t rows, int64_t C,
                            int64_t vocab, int64_t n_positions);

// dtable[tokens[r]] += dx[r]; dpositions[r % period] += dx[r] (when not null). dtable: (vocab,
// C) floats; dpositions: (min(rows, period), C) floats at least; dx: (rows, C).
void embedding_backward(Context& context, View dtable, std::optional<View> dpositions, View dx,
                        View tokens, int64_t rows, int64_t C, int64_t vocab,
                        int64_t period = kNoPeriod);

}  // namespace tinylm::kernels::vulkan
