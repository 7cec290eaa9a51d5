#include "model_kind.h"

#include <cstdio>
#include <optional>

#include "cli_util.h"
#include "tinylm/core/error.h"
#include "tinylm/core/parallel.h"
#include "tinylm/hub/download.h"
#include "tinylm/kernels/vulkan/devices.h"

namespace tinylm::cli {

std::string local_model_path(const std::string& path) {
  if (path.rfind(kHubPrefix, 0) != 0) return path;
  const std::string spec = path.substr(std::string_view(kHubPrefix).size());
  try {
    hub::parse_repo_spec(spec);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return hub::resolve_hf_model(spec);
}

DetectedModel resolve_model(const std::string& command, const std::string& given_path,
                            const std::string& arch,
                            const std::vector<const families::Family*>& accepted) {
  const std::string path = local_model_path(given_path);
  DetectedModel d = families::detect(path);
  check(d.format != checkpoints::Format::missing, path, ": no such file or directory");
  std::string expected;
  for (const families::Family* f : accepted)
    expected += std::string(expected.empty() ? "" : " or ") + std::string(f->expected);
  bool ok = false;
  for (const families::Family* f : accepted) ok = ok || d.family == f;
  if (!arch.empty()) {
    const families::Family* named = families::by_name(arch);
    if (d.family == nullptr && !d.foreign) {  // the loader of that family says what is wrong
      for (const families::Family* f : accepted)
        if (f == named) d.family = f;
      return d;
    }
    check(d.family == named, path, ": this is ", d.what, ", but --arch ", arch, " expects ",
          named ? named->expected : "another kind");
  }
  check(ok, path, ": this is ", d.what, "; ", command, " expects ", expected);
  return d;
}

void add_arch_option(CLI::App* cmd, std::string& arch,
                     const std::vector<const families::Family*>& accepted) {
  cmd->add_option("--arch", arch,
                  families::names_text(accepted) + " (default: what the --model file is)")
      ->check(CLI::IsMember(families::names(accepted)));
}

void ModelFlags::add_to(CLI::App* cmd) {
  cmd->add_option("-m,--model", model,
                  "Model directory (config.json + model.safetensors), weights file or .gguf, or "
                  "hf:ORG/NAME[@REVISION] from the Hugging Face Hub (tinylm download)")
      ->required();
  cmd->add_option("--config", load.config, "config.json, when not beside the weights");
  cmd->add_option("--tokenizer", load.tokenizer,
                  "tokenizer.json or a directory with tokenizer.json, vocab.json + merges.txt or "
                  "encoder.json + vocab.bpe (default: the model's, else data/gpt2)");
  cmd->add_option("--dtype", load.dtype,
                  "Weights: f32, bf16 or f16 (and the KV cache, unless --cache-type), or q8_0 / "
                  "q4_0 (ggml's blocks, quantized at load, or used in place from a GGUF of that "
                  "type; the KV cache f32 unless --cache-type). Default: f32, or a Q8_0/Q4_0 "
                  "GGUF's own type")
      ->check(CLI::IsMember({"f32", "bf16", "f16", "q8_0", "q4_0"}));
  cmd->add_option("--activations", load.activations,
                  "f32 (default). With q8_0 / q4_0 weights: q8_0 (each row quantized to 8 bits "
                  "per block of 32, as llama.cpp computes: faster decode, slightly less "
                  "accurate). With bf16 weights, on a CPU with AVX512_BF16: bf16 (each row "
                  "rounded to bf16: batches and prompts about twice as fast, slightly less "
                  "accurate)")
      ->check(CLI::IsMember({"f32", "q8_0", "bf16"}));
  cmd->add_option("--cache-type", load.cache_type,
                  "The KV cache's type: f32, bf16 or f16 (keys and values rounded to it as they "
                  "are stored, as llama.cpp's --cache-type-k/v; half the bytes, which batched "
                  "decoding reads every step). Default: the weights' type for bf16 and f16, else "
                  "f32")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
  cmd->add_option("--device", load.device,
                  "cpu (default), gpu or gpu:N: where GPT-2 runs (tinylm devices lists the GPUs; "
                  "on a GPU: f32, f16 or bf16 weights, f32 activations)");
  cmd->add_option("-t,--threads", threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, max_threads()));
}

void check_load_flags(const ModelFlags& flags, const DetectedModel& file, std::string_view verb) {
  const families::Family& family = *file.family;
  const std::string& device = flags.load.device;
  if (device != "cpu") {
    // Its spelling, what a GPU runs, then whether the device is there: usage errors, as train's.
    int gpu = 0;
    try {
      gpu = kernels::vulkan::parse_device(device);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    if (!family.gpu)
      throw UsageError(cat("--device ", device, ": ", family.title, " ", verb, " on the CPU only"));
    const std::string& dtype = flags.load.dtype;
    if (!dtype.empty() && dtype != "f32" && dtype != "f16" && dtype != "bf16")
      throw UsageError(cat("--dtype ", dtype, " with --device ", device,
                           ": a GPU runs f32, f16 or bf16 weights (", dtype, " runs on the CPU)"));
    if (flags.load.activations != "f32")
      throw UsageError(cat("--activations ", flags.load.activations, " with --device ", device,
                           ": a GPU computes in f32"));
    if (!flags.load.cache_type.empty())
      throw UsageError(cat("--cache-type ", flags.load.cache_type, " with --device ", device,
                           ": a GPU keeps its KV cache in the weights' type"));
    try {
      kernels::vulkan::check_gpu(gpu);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (!family.f32_only) return;
  const std::string runs = cat(": ", family.title, " ", verb, " in f32");
  if (!flags.load.dtype.empty() && flags.load.dtype != "f32")
    throw UsageError("--dtype " + flags.load.dtype + runs);
  if (flags.load.activations != "f32")
    throw UsageError("--activations " + flags.load.activations + runs);
  if (!flags.load.cache_type.empty() && flags.load.cache_type != "f32")
    throw UsageError("--cache-type " + flags.load.cache_type + runs);
}

BpeTokenizer load_model_tokenizer(const ModelFlags& flags, const DetectedModel& file) {
  return file.family->load_tokenizer(flags.load.tokenizer, file);
}

void check_tokenizer_fits(const BpeTokenizer& tok, int64_t model_vocab, const ModelFlags& flags,
                          const DetectedModel& file) {
  if (tok.vocab_size() <= model_vocab) return;
  const std::string name =
      flags.load.tokenizer.empty() ? "the tokenizer of " + file.path : flags.load.tokenizer;
  fail(name, ": the tokenizer has ", tok.vocab_size(), " ids, more than the model's vocabulary of ",
       model_vocab, " (", file.path, "); pass the model's own with --tokenizer");
}

int eot_of(const BpeTokenizer& tok, const std::string& model) {
  const std::optional<int> eot = tok.eot_id();
  check(eot.has_value(), model,
        ": its tokenizer has no <|endoftext|>, the token its documents start with");
  return *eot;
}

std::vector<int> encode_text(const families::Family& family, const BpeTokenizer& tok,
                             std::string_view text, const std::string& model) {
  if (!family.documents_start_with_eot) return tok.encode(text);
  const int eot = eot_of(tok, model);
  std::vector<int> ids;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) {
      ids.push_back(eot);
      const std::vector<int> doc = tok.encode(line);
      ids.insert(ids.end(), doc.begin(), doc.end());
    }
    at = end + 1;
  }
  if (!ids.empty()) ids.push_back(eot);
  return ids;
}

families::DecodeModel load_decoder(const ModelFlags& flags, const DetectedModel& file) {
  set_num_threads(flags.threads);
  families::DecodeModel m = file.family->load_decoder(file, flags.load);
  std::fprintf(stderr, "%s\n", m.loaded.c_str());
  return m;
}

}  // namespace tinylm::cli
