#include "tinylm/checkpoints/evl_delta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/little_endian.h"
#include "tinylm/io/text_file.h"

namespace tinylm::checkpoints {

namespace {

// Header layout (little-endian): magic, version, seven config fields, base CRC, eps (f32
// bits), rows exported, runs. Then per run: first row, row count, the rows' values (f32).
constexpr size_t kBaseCrcAt = 36, kEpsAt = 40, kRowsAt = 44, kRunsAt = 48;
constexpr size_t kRunHeaderBytes = 8;

void check_eps(float eps, std::string_view name) {
  check(std::isfinite(eps) && eps >= 0.0f, name, ": eps must be finite and >= 0 (got ", eps, ")");
}

// Maps row indices to flat element offsets (rows tile the buffer in order).
class RowMap {
 public:
  RowMap(const ParamLayout& layout, uint64_t row_width)
      : blocks_(evl_row_blocks(layout, row_width)), total_elements_(layout.size()) {
    rows_ = blocks_.empty() ? 0 : blocks_.back().first_row + blocks_.back().n_rows;
  }
  uint64_t rows() const { return rows_; }
  // The first element of `row`; row == rows() gives the element count.
  uint64_t element(uint64_t row) const {
    if (row >= rows_) return total_elements_;
    const auto it =
        std::upper_bound(blocks_.begin(), blocks_.end(), row,
                         [](uint64_t r, const EvlRowBlock& b) { return r < b.first_row; });
    const EvlRowBlock& b = *(it - 1);
    return b.first_element + (row - b.first_row) * b.row_width;
  }

 private:
  std::vector<EvlRowBlock> blocks_;
  uint64_t total_elements_ = 0;
  uint64_t rows_ = 0;
};

bool value_changed(float base, float current, float eps) {
  if (float_bits(base) == float_bits(current)) return false;
  if (eps == 0.0f) return true;  // any other bit pattern is a change: ±0, NaN payloads
  // In double the difference cannot overflow; a NaN difference is always a change.
  return !(std::fabs(static_cast<double>(current) - static_cast<double>(base)) <= eps);
}

// `params` is the base's parameters (a copy, or the loaded base's own buffer moved in).
EvlDeltaApplied apply_impl(const EvlCheckpoint& base, std::vector<float> params,
                           std::string_view base_name, std::span<const std::byte> bytes,
                           std::string_view name) {
  const EvlDeltaInfo info = decode_evl_delta_info(bytes, name);
  const std::string diff = evl_config_diff(info.config, base.config, "base");
  check(diff.empty(), name, ": made for a different model than ", base_name, ": ", diff);
  check(info.base_crc == base.crc, name, ": made against a base checkpoint with CRC ",
        io::hex32(info.base_crc), ", but ", base_name, " has CRC ", io::hex32(base.crc),
        ": wrong base");
  const ParamLayout layout = evermind::param_layout(base.config);
  check(params.size() == layout.size(), base_name, ": holds ", params.size(),
        " parameters, its configuration has ", layout.size());
  const RowMap rows(layout, static_cast<uint64_t>(base.config.d_model));

  EvlDeltaApplied out;
  out.config = base.config;
  out.params = std::move(params);
  size_t pos = kEvlDeltaHeaderBytes;
  const size_t end = bytes.size() - kEvlTrailerBytes;
  uint64_t next_row = 0;  // runs ascend: each starts at or after the previous one's end
  for (uint64_t i = 0; i < info.runs; ++i) {
    check(end - pos >= kRunHeaderBytes, name, ": run ", i, " of ", info.runs,
          " lies past the end of the data");
    const uint64_t first = io::get_u32(bytes.data() + pos);
    const uint64_t n = io::get_u32(bytes.data() + pos + 4);
    pos += kRunHeaderBytes;
    check(n >= 1, name, ": run ", i, " is empty");
    check(first >= next_row, name, ": run ", i, " (row ", first,
          ") overlaps or precedes the previous run");
    check(first + n <= rows.rows(), name, ": run ", i, " (rows ", first, "..", first + n - 1,
          ") exceeds the model's ", rows.rows(), " rows");
    const uint64_t e0 = rows.element(first), e1 = rows.element(first + n);
    check((e1 - e0) <= (end - pos) / 4, name, ": run ", i, " (", e1 - e0,
          " values) lies past the end of the data");
    for (uint64_t e = e0; e < e1; ++e, pos += 4)
      out.params[e] = bits_float(io::get_u32(bytes.data() + pos));
    next_row = first + n;
    out.rows_applied += n;
  }
  check(pos == end, name, ": ", end - pos, " bytes after the last run");
  check(out.rows_applied == info.rows_exported, name, ": runs hold ", out.rows_applied,
        " rows, the header says ", info.rows_exported);
  return out;
}

}  // namespace

std::vector<EvlRowBlock> evl_row_blocks(const ParamLayout& layout, uint64_t row_width) {
  check(row_width > 0, "EVD0 rows: row width must be positive");
  std::vector<EvlRowBlock> blocks;
  uint64_t row = 0;
  for (const ParamEntry& e : layout.entries()) {
    if (e.numel == 0) continue;
    const uint64_t width = e.numel % row_width == 0 ? row_width : 1;
    blocks.push_back({row, e.offset, width, e.numel / width});
    row += e.numel / width;
  }
  return blocks;
}

std::vector<uint64_t> evl_changed_rows(const ParamLayout& layout, uint64_t row_width,
                                       std::span<const float> base, std::span<const float> current,
                                       float eps) {
  check_eps(eps, "EVD0 delta");
  check(base.size() == layout.size() && current.size() == layout.size(), "EVD0 delta: base has ",
        base.size(), " parameters, current has ", current.size(), ", the model has ",
        layout.size());
  std::vector<uint64_t> changed;
  for (const EvlRowBlock& b : evl_row_blocks(layout, row_width)) {
    for (uint64_t r = 0; r < b.n_rows; ++r) {
      const uint64_t e0 = b.first_element + r * b.row_width;
      bool any = false;
      if (eps == 0.0f) {
        any = std::memcmp(&base[e0], &current[e0], b.row_width * sizeof(float)) != 0;
      } else {
        for (uint64_t e = e0; e < e0 + b.row_width && !any; ++e) {
          any = value_changed(base[e], current[e], eps);
        }
      }
      if (any) changed.push_back(b.first_row + r);
    }
  }
  return changed;
}

std::vector<std::byte> encode_evl_delta(const EvlCheckpoint& base, std::span<const float> current,
                                        float eps, EvlDeltaSummary* summary) {
  const ParamLayout layout = evermind::param_layout(base.config);
  const auto width = static_cast<uint64_t>(base.config.d_model);
  const std::vector<uint64_t> changed = evl_changed_rows(layout, width, base.params, current, eps);
  const RowMap rows(layout, width);
  check(rows.rows() <= std::numeric_limits<uint32_t>::max(), "EVD0 delta: the model has ",
        rows.rows(), " rows, more than the format's u32 row indices address");

  std::vector<std::byte> out;
  io::append_u32(out, kEvlDeltaMagic);
  io::append_u32(out, kEvlDeltaVersion);
  out.resize(out.size() + kEvlConfigBytes);
  put_evl_config(out.data() + 8, base.config, "EVD0 delta");
  io::append_u32(out, base.crc);
  io::append_u32(out, float_bits(eps));
  io::append_u32(out, static_cast<uint32_t>(changed.size()));
  io::append_u32(out, 0);  // run count, filled in below
  uint32_t n_runs = 0;
  for (size_t i = 0; i < changed.size();) {
    size_t j = i + 1;
    while (j < changed.size() && changed[j] == changed[j - 1] + 1) ++j;
    const uint64_t first = changed[i], n = j - i;
    io::append_u32(out, static_cast<uint32_t>(first));
    io::append_u32(out, static_cast<uint32_t>(n));
    for (uint64_t e = rows.element(first); e < rows.element(first + n); ++e) {
      io::append_u32(out, float_bits(current[e]));
    }
    ++n_runs;
    i = j;
  }
  for (int b = 0; b < 4; ++b)
    out[kRunsAt + b] = static_cast<std::byte>((n_runs >> (8 * b)) & 0xffu);
  append_evl_trailer(out);
  if (summary) *summary = {rows.rows(), changed.size(), n_runs, out.size()};
  return out;
}

EvlDeltaSummary export_evl_delta(const std::string& delta_path, const EvlCheckpoint& base,
                                 std::span<const float> current, float eps) {
  EvlDeltaSummary summary;
  std::vector<std::byte> bytes;
  try {
    bytes = encode_evl_delta(base, current, eps, &summary);
  } catch (const Error& e) {
    fail(delta_path, ": ", e.what());
  }
  io::AtomicFile file(delta_path);
  file.write(bytes);
  file.commit();
  return summary;
}

EvlDeltaSummary export_evl_delta(const std::string& delta_path, const std::string& base_path,
                                 std::span<const float> current, float eps) {
  return export_evl_delta(delta_path, load_evl(base_path), current, eps);
}

EvlDeltaInfo decode_evl_delta_info(std::span<const std::byte> bytes, std::string_view name) {
  check(bytes.size() >= 4, name, ": not an EVD0 delta (", bytes.size(), " bytes)");
  const uint32_t magic = io::get_u32(bytes.data());
  check(magic == kEvlDeltaMagic, name, ": not an EVD0 delta (magic ", io::hex32(magic),
        ", expected ", io::hex32(kEvlDeltaMagic), ")");
  constexpr size_t kMin = kEvlDeltaHeaderBytes + kEvlTrailerBytes;
  check(bytes.size() >= kMin, name, ": ", bytes.size(),
        " bytes is shorter than an EVD0 header and trailer (", kMin, "): truncated");
  const uint32_t version = io::get_u32(bytes.data() + 4);
  check(version == kEvlDeltaVersion, name, ": unsupported EVD0 version ", version,
        " (this reader knows ", kEvlDeltaVersion, ")");
  EvlDeltaInfo info;
  info.crc = check_evl_trailer(bytes, name);
  info.config = get_evl_config(bytes.data() + 8, name);
  info.base_crc = io::get_u32(bytes.data() + kBaseCrcAt);
  info.eps = bits_float(io::get_u32(bytes.data() + kEpsAt));
  check_eps(info.eps, name);
  info.rows_exported = io::get_u32(bytes.data() + kRowsAt);
  info.runs = io::get_u32(bytes.data() + kRunsAt);
  // Each run takes its 8-byte header and at least one 4-byte value per row.
  const uint64_t data = bytes.size() - kMin;
  check(info.runs <= info.rows_exported && (info.runs == 0) == (info.rows_exported == 0), name,
        ": ", info.runs, " runs cannot hold ", info.rows_exported, " rows");
  check(info.runs * kRunHeaderBytes + info.rows_exported * 4 <= data, name, ": ", info.runs,
        " runs of ", info.rows_exported, " rows do not fit in ", data, " bytes: truncated");
  return info;
}

EvlDeltaInfo read_evl_delta_info(const std::string& path) {
  const std::string bytes = io::read_file(path);
  return decode_evl_delta_info(std::as_bytes(std::span<const char>(bytes)), path);
}

EvlDeltaApplied apply_evl_delta(const EvlCheckpoint& base, std::span<const std::byte> delta,
                                std::string_view delta_name) {
  return apply_impl(base, base.params, "the base checkpoint", delta, delta_name);
}

EvlDeltaApplied apply_evl_delta(const EvlCheckpoint& base, const std::string& delta_path) {
  const std::string bytes = io::read_file(delta_path);
  return apply_evl_delta(base, std::as_bytes(std::span<const char>(bytes)), delta_path);
}

EvlDeltaApplied apply_evl_delta(const std::string& base_path, const std::string& delta_path) {
  EvlCheckpoint base = load_evl(base_path);
  const std::string bytes = io::read_file(delta_path);
  std::vector<float> params = std::move(base.params);  // the base is not needed afterwards
  return apply_impl(base, std::move(params), base_path, std::as_bytes(std::span<const char>(bytes)),
                    delta_path);
}

uint64_t apply_evl_delta_to_file(const std::string& base_path, const std::string& delta_path,
                                 const std::string& out_path, EvlPrecision precision) {
  const EvlDeltaApplied applied = apply_evl_delta(base_path, delta_path);
  save_evl(out_path, applied.config, applied.params, precision);
  return applied.rows_applied;
}

}  // namespace tinylm::checkpoints
