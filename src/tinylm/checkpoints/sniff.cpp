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

Sniffed said(Format format, const std::string& path, const char* what) {
  Sniffed d;
  d.format = format;
  d.path = path;
  d.what = what;
  return d;
}

// A file's format from its first bytes, with what its header says.
Sniffed sniff_file(const std::string& path) {
  Sniffed d = said(Format::none, path, "not a model file tinylm knows");
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, 8);
  // The GGUF loader takes any file with the magic (and says what is wrong with a short one);
  // the architecture needs the 8 bytes every other check reads.
  if (in.gcount() >= 4 && std::memcmp(head, "GGUF", 4) == 0) d.format = Format::gguf;
  if (in.gcount() < 8) return d;
  if (std::memcmp(head, "0LVE", 4) == 0) return said(Format::evl, path, "an EVL0 checkpoint");
  if (std::memcmp(head, "GGUF", 4) == 0) {
    d.gguf_architecture = "";
    try {
      const io::GgufFile f = io::GgufFile::open(path);
      const io::GgufValue* arch = f.find("general.architecture");
      if (arch && arch->type == io::GgufType::string) d.gguf_architecture = arch->strings[0];
    } catch (const Error&) {
    }
    d.what = "a GGUF model of architecture '" + *d.gguf_architecture + "'";
    return d;
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(head[i]);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || n < 2 || n > size - 8 || n > (uint64_t{100} << 20)) return d;
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)) || header[0] != '{') return d;
  d = said(Format::safetensors, path, "a safetensors file with neither GPT-2 nor microgpt tensors");
  d.safetensors_header = std::move(header);
  return d;
}

}  // namespace

Sniffed sniff(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) return said(Format::missing, path, "missing");
  if (!fs::is_directory(p, ec)) {
    if (p.filename() == "config.json" || p.filename() == "model.safetensors.index.json") {
      Sniffed d = sniff(p.parent_path().empty() ? "." : p.parent_path().string());
      if (d.format == Format::hf_directory) return d;
      return said(Format::none, path, "a JSON file, not weights");
    }
    return sniff_file(path);
  }
  // A run directory of `tinylm train`: its newest checkpoint.
  if (fs::exists(p / "run.json", ec) && fs::exists(p / "latest", ec))
    return sniff((p / "latest").string());
  if (fs::exists(p / "config.json", ec) && (fs::exists(p / "model.safetensors", ec) ||
                                            fs::exists(p / "model.safetensors.index.json", ec)))
    return said(Format::hf_directory, path, "a Hugging Face model directory");
  if (fs::exists(p / "model.evl", ec)) return sniff((p / "model.evl").string());
  if (fs::exists(p / "model.safetensors", ec)) {
    Sniffed d = sniff((p / "model.safetensors").string());
    d.directory = path;
    return d;
  }
  return said(Format::none, path, "a directory without a model tinylm knows");
}

}  // namespace tinylm::checkpoints
