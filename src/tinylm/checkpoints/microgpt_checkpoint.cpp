#include "tinylm/checkpoints/microgpt_checkpoint.h"

#include <charconv>

#include "tinylm/core/error.h"
#include "tinylm/io/safetensors.h"

namespace tinylm::checkpoints {

namespace {
constexpr const char* kFormat = "tinylm-microgpt-1";

template <class Int = int>
Int metadata_int(const io::SafetensorsFile& f, const std::string& key) {
  const auto it = f.metadata().find(key);
  check(it != f.metadata().end(), f.path(), ": metadata has no '", key, "'");
  Int v = 0;
  const std::string& s = it->second;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  check(ec == std::errc() && p == s.data() + s.size(), f.path(), ": metadata '", key,
        "' is not an integer: '", s, "'");
  return v;
}
}  // namespace

void save_microgpt(const std::string& path, const microgpt::Model& model,
                   const CharTokenizer& tokenizer, std::optional<int64_t> documents) {
  const microgpt::Config& c = model.config();
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"chars", tokenizer.chars_utf8()},
      {"vocab_size", std::to_string(c.vocab_size)},
      {"n_embd", std::to_string(c.n_embd)},
      {"n_head", std::to_string(c.n_head)},
      {"n_layer", std::to_string(c.n_layer)},
      {"block_size", std::to_string(c.block_size)},
  };
  if (documents) meta["documents"] = std::to_string(*documents);
  std::vector<io::SafetensorsWriteEntry> tensors;
  const std::span<const double> flat = model.params();
  for (const ParamEntry& e : model.layout().entries()) {
    tensors.push_back({e.name, "F64", e.shape, std::as_bytes(flat.subspan(e.offset, e.numel))});
  }
  io::write_safetensors(path, tensors, meta);
}

MicrogptCheckpoint load_microgpt(const std::string& path) {
  const io::SafetensorsFile f = io::SafetensorsFile::open(path);
  const auto fmt = f.metadata().find("format");
  check(fmt != f.metadata().end() && fmt->second == kFormat, path,
        ": not a tinylm microgpt checkpoint (metadata format is not '", kFormat, "')");
  MicrogptCheckpoint ck;
  ck.config.vocab_size = metadata_int(f, "vocab_size");
  ck.config.n_embd = metadata_int(f, "n_embd");
  ck.config.n_head = metadata_int(f, "n_head");
  ck.config.n_layer = metadata_int(f, "n_layer");
  ck.config.block_size = metadata_int(f, "block_size");
  try {
    ck.config.validate();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  const auto chars = f.metadata().find("chars");
  check(chars != f.metadata().end(), path, ": metadata has no 'chars'");
  ck.chars = chars->second;
  if (f.metadata().count("documents") != 0) {
    ck.documents = metadata_int<int64_t>(f, "documents");
    check(*ck.documents >= 0, path, ": metadata 'documents' is negative");
  }
  const CharTokenizer tok = CharTokenizer::from_chars(ck.chars);
  check(tok.vocab_size() == ck.config.vocab_size, path, ": metadata chars give a vocabulary of ",
        tok.vocab_size(), " but vocab_size is ", ck.config.vocab_size);
  const ParamLayout layout = microgpt::param_layout(ck.config);
  // Every tensor must be present with its shape before anything is allocated, so a small
  // file claiming a huge configuration fails on its first missing tensor.
  for (const ParamEntry& e : layout.entries()) {
    const io::SafetensorsEntry* t = f.find(e.name);
    check(t != nullptr, path, ": missing tensor ", e.name);
    check(t->shape == e.shape, path, ": tensor ", e.name, ": shape ", shape_str(t->shape),
          ", expected ", shape_str(e.shape));
  }
  ck.params.resize(layout.size());
  for (const ParamEntry& e : layout.entries()) {
    const std::vector<double> v = f.read_f64(e.name, e.shape);
    std::copy(v.begin(), v.end(), ck.params.begin() + static_cast<std::ptrdiff_t>(e.offset));
  }
  check(f.entries().size() == layout.entries().size(), path, ": holds ", f.entries().size(),
        " tensors, a microgpt of this configuration has ", layout.entries().size());
  return ck;
}

}  // namespace tinylm::checkpoints
