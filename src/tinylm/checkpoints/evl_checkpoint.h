#pragma once
// EVL0: the EvermindLM checkpoint (docs/formats.md, "EvermindLM checkpoints"). Nine
// little-endian u32 — magic, version, then the seven shape fields of the configuration —
// every parameter in canonical order (evermind::param_layout) as f32 (version 1) or IEEE
// fp16 (version 2), then an 8-byte trailer: the tag "CRC1" and the CRC-32 of every byte
// before the CRC field. The seed is not stored: it only matters for initialization.
//
// io knows the EvermindLM configuration struct (a leaf header with no code above core) because
// the format's header is that configuration; nothing else of the model is used here.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/models/evermind/config.h"

namespace tinylm::checkpoints {

// The header's version field says how parameters are stored.
enum class EvlPrecision : uint32_t {
  f32 = 1,  // IEEE binary32, bit for bit
  f16 = 2,  // IEEE binary16, rounded to nearest, ties to even (NaN stays NaN, overflow → ±inf)
};
std::string_view evl_precision_name(EvlPrecision p);      // "f32" or "f16"
EvlPrecision parse_evl_precision(std::string_view name);  // "f32" / "f16"; Error otherwise

inline constexpr uint32_t kEvlMagic = 0x45564c30;   // "EVL0" as a little-endian u32
inline constexpr uint32_t kEvlCrcTag = 0x31435243;  // the bytes "CRC1" as a little-endian u32
inline constexpr size_t kEvlHeaderBytes = 36;       // nine u32
inline constexpr size_t kEvlTrailerBytes = 8;       // tag + CRC

// What the header and the file size say, without reading the parameters.
struct EvlHeader {
  evermind::Config config;  // seed is 0: the file does not store it
  EvlPrecision precision = EvlPrecision::f32;
  uint64_t file_bytes = 0;
};

struct EvlCheckpoint {
  evermind::Config config;  // seed is 0: the file does not store it
  EvlPrecision precision = EvlPrecision::f32;
  uint32_t crc = 0;           // the trailer's CRC: identifies this exact file to deltas
  std::vector<float> params;  // flat, canonical order (fp16 files are widened exactly)
};

// The size of a checkpoint of this configuration (header + parameters + trailer).
uint64_t evl_file_bytes(const evermind::Config& config, EvlPrecision precision);

// The checkpoint as bytes. params holds param_layout(config).size() values in canonical
// order; every shape field must fit a u32. Throws Error otherwise.
std::vector<std::byte> encode_evl(const evermind::Config& config, std::span<const float> params,
                                  EvlPrecision precision = EvlPrecision::f32);

// Writes the checkpoint atomically (temporary file, fsync, rename) and returns its CRC, the
// value a delta against this file records.
uint32_t save_evl(const std::string& path, const evermind::Config& config,
                  std::span<const float> params, EvlPrecision precision = EvlPrecision::f32);

// EvermindLM's tokenizer travels beside its weights: model.evl's is model.tokenizer.json
// (`tinylm train` writes it there; generate, serve and train --init-from read it there).
std::string evl_tokenizer_path(const std::string& model_path);

// Parses and fully checks a checkpoint held in memory; `name` is what errors call it. Checks,
// in order: magic, room for header and trailer, version, trailer tag, CRC, configuration
// validity, size arithmetic, exact size. Every failure throws Error("NAME: problem").
EvlCheckpoint decode_evl(std::span<const std::byte> bytes, std::string_view name);

// Reads and fully checks a checkpoint file (as decode_evl).
EvlCheckpoint load_evl(const std::string& path);

// As load_evl, and the file's configuration must equal `expected` in all seven stored fields
// (the seed is not compared); a mismatch names every differing field.
EvlCheckpoint load_evl(const std::string& path, const evermind::Config& expected);

// Reads only the header and the file size, to build a model before loading into it: checks
// magic, version, configuration validity and exact size, but not the CRC (load_evl does).
EvlHeader read_evl_header(const std::string& path);
// The same checks on the file's first bytes (up to kEvlHeaderBytes; fewer if the file is
// shorter) and its size.
EvlHeader decode_evl_header(std::span<const std::byte> head, uint64_t file_bytes,
                            std::string_view name);

// Throws Error("NAME: checkpoint does not match the model: d_model 32 (model 64), ...")
// listing every stored field (not seed) where found != expected.
void check_evl_config(const evermind::Config& found, const evermind::Config& expected,
                      std::string_view name);
// The differing stored fields as "d_model 32 (LABEL 64), top_k 1 (LABEL 2)"; empty if none.
std::string evl_config_diff(const evermind::Config& found, const evermind::Config& expected,
                            std::string_view label);

// Byte-level pieces shared with the delta format (evl_delta.h), which uses the same
// configuration fields and the same trailer.
inline constexpr size_t kEvlConfigBytes = 28;  // seven u32, in header order
// Writes vocab_size, d_model, n_layers, conv_kernel, hidden_dim, n_experts, top_k as u32 LE;
// throws Error("NAME: ...") when a field does not fit a u32.
void put_evl_config(std::byte* out, const evermind::Config& config, std::string_view name);
// Reads them back (seed 0) and validates the result; Error("NAME: ...") when invalid.
evermind::Config get_evl_config(const std::byte* in, std::string_view name);
// Appends the tag and the CRC-32 of everything already in `bytes`; returns that CRC.
uint32_t append_evl_trailer(std::vector<std::byte>& bytes);
// Checks that `bytes` ends in the tag and the CRC-32 of everything before the CRC field;
// returns the CRC. Throws Error("NAME: ...") otherwise (bytes must hold at least 8).
uint32_t check_evl_trailer(std::span<const std::byte> bytes, std::string_view name);

}  // namespace tinylm::checkpoints
