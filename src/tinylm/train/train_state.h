#pragma once
// train_state.bin: everything a resumed run needs besides the model's weights — the step
// counters, the loss scaler, the best validation loss, the run's configuration and AdamW's
// moments. The format (little-endian, offsets absolute):
//
//   0   8   magic "TLMSTATE"
//   8   4   u32 version = 1
//   12  4   u32 moment dtype: 1 = f32, 2 = f64
//   16  8   u64 n: values in each moment vector
//   24  8   u64 json_bytes
//   32  ... UTF-8 JSON object: "arch", "step", "applied_steps", "tokens_seen",
//           "bad_steps_in_a_row", "best_val_loss" (a number, or null when there is none),
//           "best_val_step", "loss_scale", "scaler_good_in_a_row", "scaler_skipped",
//           "elapsed_s", "shards" (>= 1; 1 when absent), "config" (an object), "files" (an
//           object: the CRC-32 of each other file of the checkpoint's directory, by name;
//           absent in states written before it was kept); other keys are ignored. Doubles
//           are written
//           with enough digits to read back to the same bits.
//       ... zero padding to a multiple of 64
//       ... m: n values, then v: n values
//   end-4 4 u32 zlib crc32 of every byte before it
//
// Readers check the magic, version, dtype, that the file size is exactly what the header
// implies, and the CRC, all before the JSON is parsed or anything is sized from the header;
// then every field's presence, type and range. Each failure is one Error line naming the file.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tinylm/train/loop_state.h"

namespace tinylm::train {

template <class T>  // float (GPT-2, EvermindLM) or double (microgpt)
struct TrainState {
  std::string arch;               // "gpt2" | "evermind" | "microgpt" (any non-empty name)
  LoopState loop;                 // best_val_loss finite when present, loss_scale finite and > 0,
                                  // elapsed_s finite and >= 0, and the rules below
  int64_t shards = 1;             // the batch's shards (processes x devices); kept on resume
  nlohmann::ordered_json config;  // the run's configuration (what run.json holds); an object
  // The CRC-32 of every other file of the checkpoint's directory, by file name (a plain name:
  // no '/', not "." or ".."); nullopt: not recorded (a state written before they were).
  std::optional<std::map<std::string, uint32_t>> files;
  std::vector<T> m, v;  // AdamW moments, the model's parameter order; equal sizes
};

inline constexpr char kTrainStateMagic[8] = {'T', 'L', 'M', 'S', 'T', 'A', 'T', 'E'};
inline constexpr uint32_t kTrainStateVersion = 1;

// Beyond the types: every count >= 0; applied_steps, bad_steps_in_a_row, scaler_skipped and
// best_val_step <= step. save/encode refuse a state that breaks a rule, so whatever is
// written loads back.

// The file as bytes (for tests and fuzzing; save_train_state streams instead).
template <class T>
std::vector<std::byte> encode_train_state(const TrainState<T>& state);

// Parses and fully checks a file held in memory; `name` is what errors call it. The file's
// dtype must be T's ("NAME: moments are f64, expected f32").
template <class T>
TrainState<T> decode_train_state(std::span<const std::byte> bytes, std::string_view name);

// Writes atomically (temporary file, fsync, rename, fsync of the directory). The moments go
// straight from the state's vectors to the file, the CRC computed on the way.
template <class T>
void save_train_state(const std::string& path, const TrainState<T>& state);

// The same with the moments given apart (state.m and state.v are not used): a run saves the
// optimizer's moments where they are, without copying a gigabyte into the state first.
template <class T>
void save_train_state(const std::string& path, const TrainState<T>& state, std::span<const T> m,
                      std::span<const T> v);

// Reads and checks as decode_train_state, reading the moments straight into the vectors.
template <class T>
TrainState<T> load_train_state(const std::string& path);

}  // namespace tinylm::train
