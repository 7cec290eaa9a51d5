#pragma once
// EVD0: a sparse delta between two EvermindLM checkpoints (docs/formats.md, "EvermindLM
// checkpoints"). The parameters are cut into rows — d_model consecutive values of a tensor
// whose size is a multiple of d_model, one value of any other tensor — and the delta holds,
// as raw f32, the current values of the rows whose largest change against the base exceeds
// eps. It records the base checkpoint's CRC, so it only applies to that exact file. With
// eps = 0 every row with any bit changed is exported (+0.0 → -0.0 and NaN payloads
// included), so applying reconstructs the current weights bit for bit.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/param_store.h"

namespace tinylm::checkpoints {

inline constexpr uint32_t kEvlDeltaMagic = 0x45564430;  // "EVD0" as a little-endian u32
inline constexpr uint32_t kEvlDeltaVersion = 1;
inline constexpr size_t kEvlDeltaHeaderBytes = 52;

// A run of equal-width rows: rows [first_row, first_row + n_rows) cover the flat elements
// [first_element, first_element + n_rows · row_width).
struct EvlRowBlock {
  uint64_t first_row = 0;
  uint64_t first_element = 0;
  uint64_t row_width = 0;
  uint64_t n_rows = 0;
};
// How a layout is cut into rows, in flat order: each tensor whose size is a multiple of
// row_width gives size / row_width rows of row_width values, any other tensor one row per
// value. The rows tile the flat buffer. Throws Error when row_width is 0.
std::vector<EvlRowBlock> evl_row_blocks(const ParamLayout& layout, uint64_t row_width);

// The rows (ascending indices, as evl_row_blocks numbers them) whose largest change exceeds
// eps: a value counts as changed when its bits differ and either eps is 0 or
// |current − base| > eps (or is NaN). base and current hold layout.size() values; eps must be
// finite and ≥ 0. Throws Error otherwise.
std::vector<uint64_t> evl_changed_rows(const ParamLayout& layout, uint64_t row_width,
                                       std::span<const float> base, std::span<const float> current,
                                       float eps);

struct EvlDeltaSummary {
  uint64_t rows_total = 0;     // rows in the model
  uint64_t rows_exported = 0;  // rows stored in the delta
  uint64_t runs = 0;           // stretches of consecutive exported rows
  uint64_t file_bytes = 0;
};

// The delta of `current` (param_layout(base.config).size() values) against `base`, as bytes.
std::vector<std::byte> encode_evl_delta(const EvlCheckpoint& base, std::span<const float> current,
                                        float eps, EvlDeltaSummary* summary = nullptr);

// Writes the delta atomically. The base is a loaded checkpoint (its crc is what the delta
// records) or a checkpoint file, which is loaded and fully checked first.
EvlDeltaSummary export_evl_delta(const std::string& delta_path, const EvlCheckpoint& base,
                                 std::span<const float> current, float eps);
EvlDeltaSummary export_evl_delta(const std::string& delta_path, const std::string& base_path,
                                 std::span<const float> current, float eps);

// A delta's header, after its magic, version, trailer and CRC are checked.
struct EvlDeltaInfo {
  evermind::Config config;  // the model it was made for (seed 0)
  uint32_t base_crc = 0;    // the CRC of the checkpoint it applies to
  float eps = 0;            // the threshold it was exported with
  uint64_t rows_exported = 0;
  uint64_t runs = 0;
  uint32_t crc = 0;  // the delta's own CRC
};
EvlDeltaInfo decode_evl_delta_info(std::span<const std::byte> bytes, std::string_view name);
EvlDeltaInfo read_evl_delta_info(const std::string& path);

struct EvlDeltaApplied {
  evermind::Config config;    // the base's (seed 0)
  std::vector<float> params;  // the base's parameters with the delta's rows replaced
  uint64_t rows_applied = 0;
};

// Applies a delta (bytes named `delta_name` in errors) to a loaded base. Checks the delta
// fully — header, CRC, that it was made for this model and this exact base (base.crc), and
// that its runs are ascending, in range and fill the file exactly — and throws Error naming
// the delta otherwise; the base is never modified.
EvlDeltaApplied apply_evl_delta(const EvlCheckpoint& base, std::span<const std::byte> delta,
                                std::string_view delta_name);
EvlDeltaApplied apply_evl_delta(const EvlCheckpoint& base, const std::string& delta_path);
// Loads (and fully checks) the base checkpoint file, then applies.
EvlDeltaApplied apply_evl_delta(const std::string& base_path, const std::string& delta_path);
// Applies and writes the result as a new checkpoint (atomically); returns the rows applied.
uint64_t apply_evl_delta_to_file(const std::string& base_path, const std::string& delta_path,
                                 const std::string& out_path,
                                 EvlPrecision precision = EvlPrecision::f32);

}  // namespace tinylm::checkpoints
