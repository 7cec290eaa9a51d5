#include "gpt2_common.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/checkpoints/gpt2_gguf.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"

namespace tinylm::cli {

namespace fs = std::filesystem;

void Gpt2Flags::add_to(CLI::App* cmd) {
  cmd->add_option("--model", model,
                  "Model directory (config.json + model.safetensors), weights file or .gguf")
      ->required();
  cmd->add_option("--config", config, "config.json, when not beside the weights");
  cmd->add_option("--tokenizer", tokenizer,
                  "tokenizer.json or a directory with tokenizer.json, vocab.json + merges.txt or "
                  "encoder.json + vocab.bpe (default: the model's, else data/gpt2)");
  cmd->add_option("--dtype", dtype,
                  "Weights: f32, bf16 or f16 (and the KV cache), or q8_0 / q4_0 (ggml's blocks, "
                  "quantized at load, or used in place from a GGUF of that type; the KV cache "
                  "stays f32). Default: f32, or a Q8_0/Q4_0 GGUF's own type")
      ->check(CLI::IsMember({"f32", "bf16", "f16", "q8_0", "q4_0"}));
  cmd->add_option("--activations", activations,
                  "f32 (default). With q8_0 / q4_0 weights: q8_0 (each row quantized to 8 bits "
                  "per block of 32, as llama.cpp computes: faster decode, slightly less "
                  "accurate). With bf16 weights, on a CPU with AVX512_BF16: bf16 (each row "
                  "rounded to bf16: batches and prompts about twice as fast, slightly less "
                  "accurate)")
      ->check(CLI::IsMember({"f32", "q8_0", "bf16"}));
  cmd->add_option("--threads", threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, max_threads()));
}

std::string default_vocab_dir() {
  // Where the vendored GPT-2 vocabulary lives: ./data/gpt2 (a checkout), beside an installed
  // binary (<prefix>/share/tinylm/gpt2), or in the source tree this binary was built from.
  std::vector<fs::path> places = {"data/gpt2"};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) places.push_back(exe.parent_path().parent_path() / "share/tinylm/gpt2");
  places.push_back(fs::path(TINYLM_SOURCE_DATA_DIR) / "gpt2");
  std::string tried;
  for (const fs::path& p : places) {
    if (fs::exists(p / "encoder.json") && fs::exists(p / "vocab.bpe")) return p.string();
    tried += (tried.empty() ? "" : ", ") + p.string();
  }
  fail("no GPT-2 vocabulary (encoder.json + vocab.bpe) in ", tried, ": pass --tokenizer");
}

BpeTokenizer load_tokenizer(const std::string& explicit_path, const std::string& model_dir) {
  if (!explicit_path.empty()) {
    if (checkpoints::sniff(explicit_path).format == checkpoints::Format::gguf)
      return checkpoints::load_gguf_tokenizer(explicit_path);
    return fs::is_directory(explicit_path) ? BpeTokenizer::from_directory(explicit_path)
                                           : BpeTokenizer::from_tokenizer_json(explicit_path);
  }
  if (checkpoints::sniff(model_dir).format == checkpoints::Format::gguf)
    return checkpoints::load_gguf_tokenizer(model_dir);
  const fs::path dir =
      fs::is_directory(model_dir) ? fs::path(model_dir) : fs::path(model_dir).parent_path();
  for (const char* f : {"tokenizer.json", "vocab.json", "encoder.json"}) {
    if (!dir.empty() && fs::exists(dir / f)) return BpeTokenizer::from_directory(dir.string());
  }
  return BpeTokenizer::from_directory(default_vocab_dir());
}

gpt2::Model load_model(const Gpt2Flags& flags, const DetectedModel& file) {
  set_num_threads(flags.threads);
  Timer timer;
  std::optional<DType> dtype;
  if (!flags.dtype.empty()) dtype = parse_dtype(flags.dtype);
  // generate, serve and perplexity have always ignored --config for a GGUF file (whose
  // configuration is inside); the library's load entry refuses one.
  const std::string config = file.format == checkpoints::Format::gguf ? "" : flags.config;
  gpt2::Model model = checkpoints::load_gpt2_model(file, config, dtype);
  model.set_activations(parse_dtype(flags.activations));
  std::fprintf(
      stderr, "loaded %s in %.0f ms: %.1f MB of %s weights%s, %d threads\n", file.path.c_str(),
      timer.elapsed_ms(), model.weight_bytes() / 1e6,
      std::string(dtype_name(model.dtype())).c_str(),
      model.activations() == DType::f32
          ? ""
          : (" (" + std::string(dtype_name(model.activations())) + " activations)").c_str(),
      num_threads());
  return model;
}

}  // namespace tinylm::cli
