#include "model_kind.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tinylm/core/error.h"
#include "tinylm/io/gguf.h"

namespace tinylm::cli {

namespace fs = std::filesystem;

namespace {

const char* expected_text(ModelKind k) {
  switch (k) {
    case ModelKind::gpt2:
      return "GPT-2 (a model directory, its model.safetensors, or a gpt2 .gguf; --arch gpt2)";
    case ModelKind::evermind:
      return "EvermindLM (an .evl checkpoint; --arch evermind)";
    case ModelKind::microgpt:
      return "microgpt (tinylm microgpt --load FILE)";
    default:
      return "?";
  }
}

// A file's kind from its first bytes and, for safetensors, its header's tensor names.
DetectedModel detect_file(const std::string& path) {
  DetectedModel d{ModelKind::unknown, path, "not a model file tinylm knows"};
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  if (!in.read(head, 8)) return d;
  if (std::memcmp(head, "0LVE", 4) == 0)
    return {ModelKind::evermind, path, "an EvermindLM checkpoint (EVL0)"};
  if (std::memcmp(head, "GGUF", 4) == 0) {
    // The architecture from the metadata; a file that does not parse goes to the GPT-2 loader,
    // which says what is wrong with it.
    try {
      const io::GgufFile f = io::GgufFile::open(path);
      const io::GgufValue* arch = f.find("general.architecture");
      if (arch && arch->type == io::GgufType::string && arch->strings[0] != "gpt2")
        return {ModelKind::gguf, path, "a GGUF model of architecture '" + arch->strings[0] + "'"};
    } catch (const Error&) {
    }
    return {ModelKind::gpt2, path, "a GPT-2 GGUF file"};
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(head[i]);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || n < 2 || n > size - 8 || n > (uint64_t{100} << 20)) return d;
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)) || header[0] != '{') return d;
  if (header.find("\"tinylm-microgpt-") != std::string::npos)
    return {ModelKind::microgpt, path, "a microgpt checkpoint (safetensors)"};
  if (header.find("wte.weight\"") != std::string::npos)
    return {ModelKind::gpt2, path, "GPT-2 weights (safetensors)"};
  return {ModelKind::unknown, path, "a safetensors file with neither GPT-2 nor microgpt tensors"};
}

}  // namespace

const char* model_kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::gpt2:
      return "gpt2";
    case ModelKind::evermind:
      return "evermind";
    case ModelKind::microgpt:
      return "microgpt";
    case ModelKind::gguf:
      return "gguf";
    default:
      return "unknown";
  }
}

DetectedModel detect_model(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return {ModelKind::unknown, path, "missing"};
  if (!fs::is_directory(p, ec)) {
    if (p.filename() == "config.json" || p.filename() == "model.safetensors.index.json") {
      DetectedModel d = detect_model(p.parent_path().empty() ? "." : p.parent_path().string());
      if (d.kind == ModelKind::gpt2) return d;
      return {ModelKind::unknown, path, "a JSON file, not weights"};
    }
    return detect_file(path);
  }
  // A run directory of `tinylm train`: its newest checkpoint.
  if (fs::exists(p / "run.json", ec) && fs::exists(p / "latest", ec))
    return detect_model((p / "latest").string());
  if (fs::exists(p / "config.json", ec) && (fs::exists(p / "model.safetensors", ec) ||
                                            fs::exists(p / "model.safetensors.index.json", ec)))
    return {ModelKind::gpt2, path, "a GPT-2 model directory"};
  if (fs::exists(p / "model.evl", ec)) return detect_model((p / "model.evl").string());
  if (fs::exists(p / "model.safetensors", ec)) {
    DetectedModel d = detect_model((p / "model.safetensors").string());
    if (d.kind == ModelKind::microgpt) return d;
  }
  return {ModelKind::unknown, path, "a directory without a model tinylm knows"};
}

DetectedModel resolve_model(const std::string& command, const std::string& path,
                            const std::string& arch, std::initializer_list<ModelKind> accepted) {
  DetectedModel d = detect_model(path);
  check(d.what != "missing", path, ": no such file or directory");
  std::string expected;
  for (ModelKind k : accepted)
    expected += std::string(expected.empty() ? "" : " or ") + expected_text(k);
  bool ok = false;
  for (ModelKind k : accepted) ok = ok || d.kind == k;
  if (!arch.empty()) {
    if (d.kind == ModelKind::unknown) {  // the loader of that kind says what is wrong
      for (ModelKind k : accepted)
        if (arch == model_kind_name(k)) d.kind = k;
      return d;
    }
    check(arch == model_kind_name(d.kind), path, ": this is ", d.what, ", but --arch ", arch,
          " expects ",
          arch == "gpt2"       ? expected_text(ModelKind::gpt2)
          : arch == "evermind" ? expected_text(ModelKind::evermind)
                               : "another kind");
  }
  check(ok, path, ": this is ", d.what, "; ", command, " expects ", expected);
  return d;
}

}  // namespace tinylm::cli
