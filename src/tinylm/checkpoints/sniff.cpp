#include "tinylm/checkpoints/sniff.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tinylm/core/error.h"
#include "tinylm/io/gguf.h"

namespace tinylm::checkpoints {

namespace fs = std::filesystem;

namespace {

// A file's family from its first bytes and, for safetensors, its header's tensor names.
Sniffed sniff_file(const std::string& path) {
  Sniffed d{Family::unknown, Format::none, path, "not a model file tinylm knows"};
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, 8);
  // The GGUF loader takes any file with the magic (and says what is wrong with a short one);
  // the family needs the 8 bytes every other check reads.
  if (in.gcount() >= 4 && std::memcmp(head, "GGUF", 4) == 0) d.format = Format::gguf;
  if (in.gcount() < 8) return d;
  if (std::memcmp(head, "0LVE", 4) == 0)
    return {Family::evermind, Format::evl, path, "an EvermindLM checkpoint (EVL0)"};
  if (std::memcmp(head, "GGUF", 4) == 0) {
    // The architecture from the metadata; a file that does not parse goes to the GPT-2 loader,
    // which says what is wrong with it.
    try {
      const io::GgufFile f = io::GgufFile::open(path);
      const io::GgufValue* arch = f.find("general.architecture");
      if (arch && arch->type == io::GgufType::string && arch->strings[0] != "gpt2")
        return {Family::foreign, Format::gguf, path,
                "a GGUF model of architecture '" + arch->strings[0] + "'"};
    } catch (const Error&) {
    }
    return {Family::gpt2, Format::gguf, path, "a GPT-2 GGUF file"};
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(head[i]);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || n < 2 || n > size - 8 || n > (uint64_t{100} << 20)) return d;
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)) || header[0] != '{') return d;
  if (header.find("\"tinylm-microgpt-") != std::string::npos)
    return {Family::microgpt, Format::safetensors, path, "a microgpt checkpoint (safetensors)"};
  if (header.find("wte.weight\"") != std::string::npos)
    return {Family::gpt2, Format::safetensors, path, "GPT-2 weights (safetensors)"};
  return {Family::unknown, Format::safetensors, path,
          "a safetensors file with neither GPT-2 nor microgpt tensors"};
}

}  // namespace

const char* family_name(Family family) {
  switch (family) {
    case Family::gpt2:
      return "gpt2";
    case Family::evermind:
      return "evermind";
    case Family::microgpt:
      return "microgpt";
    case Family::foreign:
      return "gguf";
    default:
      return "unknown";
  }
}

Sniffed sniff(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return {Family::unknown, Format::missing, path, "missing"};
  if (!fs::is_directory(p, ec)) {
    if (p.filename() == "config.json" || p.filename() == "model.safetensors.index.json") {
      Sniffed d = sniff(p.parent_path().empty() ? "." : p.parent_path().string());
      if (d.family == Family::gpt2) return d;
      return {Family::unknown, Format::none, path, "a JSON file, not weights"};
    }
    return sniff_file(path);
  }
  // A run directory of `tinylm train`: its newest checkpoint.
  if (fs::exists(p / "run.json", ec) && fs::exists(p / "latest", ec))
    return sniff((p / "latest").string());
  if (fs::exists(p / "config.json", ec) && (fs::exists(p / "model.safetensors", ec) ||
                                            fs::exists(p / "model.safetensors.index.json", ec)))
    return {Family::gpt2, Format::hf_directory, path, "a GPT-2 model directory"};
  if (fs::exists(p / "model.evl", ec)) return sniff((p / "model.evl").string());
  if (fs::exists(p / "model.safetensors", ec)) {
    Sniffed d = sniff((p / "model.safetensors").string());
    if (d.family == Family::microgpt) return d;
  }
  return {Family::unknown, Format::none, path, "a directory without a model tinylm knows"};
}

}  // namespace tinylm::checkpoints
