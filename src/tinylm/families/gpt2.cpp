// GPT-2's record: Hugging Face directories, their safetensors, GGUF files of architecture gpt2.
#include "tinylm/families/gpt2.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/checkpoints/gpt2_config_json.h"
#include "tinylm/checkpoints/gpt2_gguf.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/core/timer.h"
#include "tinylm/kernels/vulkan/devices.h"
#include "tinylm/train/family.h"

namespace tinylm::families {

namespace fs = std::filesystem;

namespace {

const char* recognise(const checkpoints::Sniffed& file) {
  using checkpoints::Format;
  if (!file.directory.empty()) return nullptr;  // a GPT-2 directory has its config.json
  if (file.format == Format::hf_directory) return "a GPT-2 model directory";
  // A GGUF whose metadata does not parse is taken for GPT-2's: its loader says what is wrong.
  if (file.format == Format::gguf && file.gguf_architecture &&
      (file.gguf_architecture->empty() || *file.gguf_architecture == "gpt2"))
    return "a GPT-2 GGUF file";
  if (file.format == Format::safetensors &&
      file.safetensors_header.find("wte.weight\"") != std::string::npos)
    return "GPT-2 weights (safetensors)";
  return nullptr;
}

DecodeModel load_decoder(const checkpoints::Sniffed& file, const LoadOptions& options) {
  std::string loaded;
  auto model = std::make_shared<gpt2::Model>(load_gpt2_weights(file, options, loaded));
  return decode_model(std::move(model), generate::gpt2_backend, std::move(loaded));
}

}  // namespace

extern const Family gpt2_family{
    .name = "gpt2",
    .title = "GPT-2",
    .expected = "GPT-2 (a model directory, its model.safetensors, or a gpt2 .gguf; --arch gpt2)",
    .recognise = recognise,
    .load_tokenizer = load_gpt2_tokenizer,
    .load_decoder = load_decoder,
    .gpu = true,
    .perplexity = true,
    .convert = true,
    .training = &train::train_family("gpt2"),
};

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

BpeTokenizer load_gpt2_tokenizer(const std::string& explicit_path,
                                 const checkpoints::Sniffed& model) {
  if (!explicit_path.empty()) {
    if (checkpoints::sniff(explicit_path).format == checkpoints::Format::gguf)
      return checkpoints::load_gguf_tokenizer(explicit_path);
    return fs::is_directory(explicit_path) ? BpeTokenizer::from_directory(explicit_path)
                                           : BpeTokenizer::from_tokenizer_json(explicit_path);
  }
  if (model.format == checkpoints::Format::gguf)
    return checkpoints::load_gguf_tokenizer(model.path);
  const fs::path dir =
      fs::is_directory(model.path) ? fs::path(model.path) : fs::path(model.path).parent_path();
  for (const char* f : {"tokenizer.json", "vocab.json", "encoder.json"}) {
    if (!dir.empty() && fs::exists(dir / f)) return BpeTokenizer::from_directory(dir.string());
  }
  return BpeTokenizer::from_directory(default_vocab_dir());
}

gpt2::Model load_gpt2_weights(const checkpoints::Sniffed& file, const LoadOptions& options,
                              std::string& loaded) {
  Timer timer;
  std::optional<DType> dtype;
  if (!options.dtype.empty()) dtype = parse_dtype(options.dtype);
  // generate, serve and perplexity have always ignored --config for a GGUF file (whose
  // configuration is inside); the library's load entry refuses one.
  const std::string config = file.format == checkpoints::Format::gguf ? "" : options.config;
  const int gpu = kernels::vulkan::parse_device(options.device);
  std::string where;
  gpt2::Model model = [&] {
    if (gpu < 0) return checkpoints::load_gpt2_model(file, config, dtype);
    // On a GPU: refused before the weights are read when it cannot hold them; read in f32 and
    // uploaded in the requested type (f32 by default, whatever the file holds).
    const DType on_gpu = dtype.value_or(DType::f32);
    check_gpt2_fits_gpu(gpu,
                        config.empty() ? checkpoints::read_gpt2_checkpoint_config(file.path)
                                       : checkpoints::read_gpt2_config_json(config),
                        on_gpu, options.sequences, options.logit_rows);
    const std::shared_ptr<kernels::vulkan::Context> context = kernels::vulkan::open_gpu(gpu);
    gpt2::Model m = checkpoints::load_gpt2_model(file, config, DType::f32)
                        .to_gpu(context, on_gpu, options.sequences);
    where = " on GPU " + std::to_string(gpu) + " (" + m.device_name() + ")";
    return m;
  }();
  model.set_activations(parse_dtype(options.activations));
  if (!options.cache_type.empty()) model.set_cache_type(parse_dtype(options.cache_type));
  // What the load line adds to the weights' type: 8- or 16-bit activations, a chosen KV cache.
  std::string types;
  if (model.activations() != DType::f32)
    types = " (" + std::string(dtype_name(model.activations())) + " activations)";
  if (!options.cache_type.empty())
    types += ", " + std::string(dtype_name(model.cache_type())) + " KV cache";
  char line[256];
  std::snprintf(line, sizeof line, " in %.0f ms: %.1f MB of %s weights%s", timer.elapsed_ms(),
                model.weight_bytes() / 1e6, std::string(dtype_name(model.dtype())).c_str(),
                types.c_str());
  loaded = "loaded " + file.path + line +
           (gpu < 0 ? ", " + std::to_string(num_threads()) + " threads" : where);
  return model;
}

void check_gpt2_fits_gpu(int gpu, const gpt2::Config& config, DType dtype, int sequences,
                         int logit_rows) {
  const gpt2::Model::GpuNeeds needs = gpt2::Model::gpu_needs(config, dtype, sequences, logit_rows);
  const std::string smaller = sequences > 1 ? "a smaller --dtype, fewer --slots, or --device cpu"
                                            : "a smaller --dtype, or --device cpu";
  const kernels::vulkan::GpuNeed bound[] = {
      {"one of the model's buffers (a layer's weights, the embeddings, logits or a layer's "
       "caches) spans",
       needs.largest_binding, smaller}};
  kernels::vulkan::check_gpu_fits(gpu, {"the model", needs.bytes, smaller}, bound,
                                  cat(" in ", dtype_name(dtype)));
}

}  // namespace tinylm::families
