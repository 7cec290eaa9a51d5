// GPT-2's record: Hugging Face directories, their safetensors, GGUF files of architecture gpt2;
// how it trains.
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
#include "tinylm/train/gpt2_trainable.h"
#include "tinylm/train/run_config.h"
#include "tinylm/train/run_session.h"

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

// How it trains (train/family.h): RunConfig's own defaults and --preset's shape, Hugging Face
// weights, f32.

constexpr int kGpt2Vocab = 50257;  // a fresh model's size before its tokenizer is read

void gpt2_defaults(train::RunConfig& c) {
  const gpt2::Config g = gpt2::preset(c.preset);
  c.n_layer = g.n_layer;
  c.n_head = g.n_head;
  c.n_embd = g.n_embd;
  c.block_size = g.n_positions;
  c.seq_len = c.block_size;
}

// The shape fields not given come from --preset, and --seq-len from --block-size (nanoGPT's
// block_size is both). A run stored before these flags existed (no "bias") had its preset's.
void gpt2_complete(train::RunConfig& c, const nlohmann::ordered_json& given, bool resumed) {
  const bool before_shape_flags = resumed && !given.contains("bias");
  const auto from_preset = [&](const char* name) {
    return before_shape_flags || !given.contains(name);
  };
  gpt2::Config g;
  try {
    g = gpt2::preset(c.preset);
  } catch (const Error& e) {
    throw train::FlagError(cat("--preset: ", e.what()));
  }
  if (from_preset("n-layer")) c.n_layer = g.n_layer;
  if (from_preset("n-head")) c.n_head = g.n_head;
  if (from_preset("n-embd")) c.n_embd = g.n_embd;
  if (from_preset("block-size")) c.block_size = g.n_positions;
  if (!given.contains("seq-len")) c.seq_len = c.block_size;
}

void gpt2_check_fresh(const train::RunConfig& c) {
  try {
    train::gpt2_config(c, kGpt2Vocab).validate();
  } catch (const Error& e) {
    fail("--arch gpt2 shape (--n-layer ", c.n_layer, ", --n-head ", c.n_head, ", --n-embd ",
         c.n_embd, ", --block-size ", c.block_size, "): ", e.what());
  }
  check(c.seq_len <= c.block_size, "--seq-len ", c.seq_len, " is longer than the model's ",
        c.block_size, " positions: lower --seq-len or raise --block-size");
  train::check_fits_memory(
      "--arch gpt2 shape",
      static_cast<int64_t>(gpt2::param_layout(train::gpt2_config(c, kGpt2Vocab)).size()));
}

gpt2::Config gpt2_model_config(const train::RunConfig& c) {
  return c.init_from.empty() ? train::gpt2_config(c, kGpt2Vocab)
                             : checkpoints::read_gpt2_checkpoint_config(c.init_from);
}

train::ModelSize gpt2_size(const train::RunConfig& c) {
  const gpt2::Config g = gpt2_model_config(c);
  return {gpt2::param_layout(g).size(), checkpoints::gpt2_saved_bytes(g)};
}

void gpt2_check_device(const train::RunConfig& c) {
  const int gpu = kernels::vulkan::parse_device(c.device);
  if (gpu < 0) return;
  train::check_gpt2_fits_gpu(gpu, gpt2_model_config(c),
                             {static_cast<int>(train::shard_rows(c)), static_cast<int>(c.seq_len),
                              static_cast<float>(c.dropout), train::parse_compute_dtype(c.compute)},
                             c.devices);
}

// The starting weights' own vocabulary, else the bundled one.
std::string gpt2_tokenizer(const train::RunConfig& c, std::FILE* log) {
  const fs::path init(c.init_from);
  const bool own = !c.init_from.empty() && fs::is_directory(init) &&
                   (fs::exists(init / "tokenizer.json") || fs::exists(init / "vocab.json") ||
                    fs::exists(init / "encoder.json"));
  if (own) return init.string();
  std::string bundled = default_vocab_dir();
  if (!c.init_from.empty()) {
    std::fprintf(log,
                 "tokenizer: the bundled GPT-2 vocabulary (%s has no tokenizer.json, vocab.json or "
                 "encoder.json; pass --tokenizer for another)\n",
                 c.init_from.c_str());
  }
  return bundled;
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
    .training = {.shape = "preset n-layer n-head n-embd block-size bias",
                 .options = "tokenizer seq-len dropout compute-dtype sample-every",
                 .gpu = true,
                 .apply_defaults = gpt2_defaults,
                 .complete = gpt2_complete,
                 .check_fresh_model = gpt2_check_fresh,
                 .model_size = gpt2_size,
                 .default_tokenizer = gpt2_tokenizer,
                 .check_device = gpt2_check_device,
                 .run = train::run_gpt2},
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
