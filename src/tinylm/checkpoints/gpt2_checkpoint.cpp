#include "tinylm/checkpoints/gpt2_checkpoint.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tinylm/checkpoints/gpt2_config_json.h"
#include "tinylm/checkpoints/gpt2_gguf.h"
#include "tinylm/core/dtype.h"
#include "tinylm/core/error.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/io/text_file.h"

namespace tinylm::checkpoints {

namespace fs = std::filesystem;

namespace {

// The safetensors files of a checkpoint and which file holds each tensor name.
struct TensorSource {
  std::vector<io::SafetensorsFile> files;
  std::map<std::string, size_t> where;  // tensor name -> index in files
};

TensorSource open_tensors(const fs::path& weights) {
  TensorSource src;
  const auto add_file = [&](const fs::path& p) {
    src.files.push_back(io::SafetensorsFile::open(p.string()));
    for (const auto& e : src.files.back().entries()) src.where[e.name] = src.files.size() - 1;
  };
  if (weights.extension() == ".json") {  // sharded: model.safetensors.index.json
    const std::string path = weights.string();
    const nlohmann::ordered_json j = io::parse_json_strict(io::read_file(path), path);
    check(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), path,
          ": no weight_map object");
    std::map<std::string, size_t> shard_index;
    for (const auto& [name, file] : j["weight_map"].items()) {
      check(file.is_string(), path, ": weight_map entry ", name, " is not a file name");
      const std::string f = file.get<std::string>();
      check(f.find('/') == std::string::npos && f != ".." && !f.empty(), path, ": shard name '", f,
            "' must be a file in the same directory");
      if (!shard_index.count(f)) {
        shard_index[f] = src.files.size();
        add_file(weights.parent_path() / f);
      }
      const io::SafetensorsFile& shard = src.files[shard_index[f]];
      check(shard.find(name) != nullptr, path, ": tensor ", name, " is mapped to ", f,
            ", which does not hold it");
      src.where[name] = shard_index[f];
    }
  } else {
    add_file(weights);
  }
  return src;
}

fs::path find_weights(const fs::path& dir) {
  for (const char* name : {"model.safetensors", "model.safetensors.index.json"}) {
    if (fs::exists(dir / name)) return dir / name;
  }
  fail(dir.string(), ": no model.safetensors or model.safetensors.index.json");
}

}  // namespace

namespace {

// A checkpoint's files with every parameter resolved to its name in them.
struct Resolved {
  gpt2::Config config;
  std::shared_ptr<TensorSource> src;
  std::vector<std::pair<ParamEntry, std::string>> params;  // layout entry, name in the files
  std::string where;
};

Resolved resolve(const std::string& model, const std::string& config_path) {
  const fs::path p(model);
  check(fs::exists(p), model, ": no such file or directory");
  const fs::path weights = fs::is_directory(p) ? find_weights(p) : p;
  const fs::path cfg =
      !config_path.empty() ? fs::path(config_path) : weights.parent_path() / "config.json";
  Resolved r;
  r.config = read_gpt2_config_json(cfg.string());
  r.src = std::make_shared<TensorSource>(open_tensors(weights));
  r.where = weights.string();
  const ParamLayout layout = gpt2::param_layout(r.config);
  std::vector<std::string> missing, misshapen;
  for (const ParamEntry& e : layout.entries()) {
    std::string name = e.name;
    if (!r.src->where.count(name)) name = "transformer." + e.name;
    if (!r.src->where.count(name)) {
      missing.push_back(e.name);
      continue;
    }
    const io::SafetensorsEntry* t = r.src->files[r.src->where.at(name)].find(name);
    if (t->shape != e.shape) {
      misshapen.push_back(name + " " + shape_str(t->shape) + " (expected " + shape_str(e.shape) +
                          ")");
      continue;
    }
    r.params.push_back({e, name});
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  check(missing.empty(), r.where, ": missing tensors: ", join(missing));
  check(misshapen.empty(), r.where, ": wrong shapes: ", join(misshapen));
  return r;
}

const io::SafetensorsFile& file_of(const Resolved& r, const std::string& name) {
  return r.src->files[r.src->where.at(name)];
}

}  // namespace

Gpt2Checkpoint load_gpt2(const std::string& model, const std::string& config_path) {
  if (sniff(model).format == Format::gguf) {
    check(config_path.empty(), model, ": a GGUF file has its configuration inside; no --config");
    return load_gpt2_gguf(model).checkpoint;
  }
  const Resolved r = resolve(model, config_path);
  Gpt2Checkpoint ck;
  ck.config = r.config;
  const ParamLayout layout = gpt2::param_layout(ck.config);
  ck.params.resize(layout.size());
  for (const auto& [e, name] : r.params) {
    file_of(r, name).read_f32_into(name, std::span(ck.params).subspan(e.offset, e.numel));
  }
  if (r.src->where.count("lm_head.weight")) {
    const Shape want{ck.config.vocab_size, ck.config.n_embd};
    std::vector<float> head = file_of(r, "lm_head.weight").read_f32("lm_head.weight", want);
    const ParamEntry& wte = layout.at("wte.weight");
    if (!std::equal(head.begin(), head.end(),
                    ck.params.begin() + static_cast<std::ptrdiff_t>(wte.offset))) {
      ck.lm_head = std::move(head);
    }
  }
  return ck;
}

gpt2::Config read_gpt2_checkpoint_config(const std::string& model) {
  if (sniff(model).format == Format::gguf) return read_gpt2_gguf_config(io::GgufFile::open(model));
  const fs::path p(model);
  return read_gpt2_config_json(
      ((fs::is_directory(p) ? p : p.parent_path()) / "config.json").string());
}

gpt2::Model load_gpt2_model(const std::string& model, const std::string& config_path, DType dtype) {
  return load_gpt2_model(sniff(model), config_path, dtype);
}

gpt2::Model load_gpt2_model(const Sniffed& file, const std::string& config_path,
                            std::optional<DType> requested) {
  const std::string& model = file.path;
  if (file.format == Format::gguf) {
    check(config_path.empty(), model, ": a GGUF file has its configuration inside; no --config");
    return load_gpt2_gguf_model(model, requested);
  }
  const DType dtype = requested.value_or(DType::f32);
  if (dtype == DType::f32) {
    const Resolved r = resolve(model, config_path);
    // In place when every tensor (and a head, if any) is F32 and 4-byte aligned in the map.
    std::map<std::string, const float*> views;
    const auto view = [&](const std::string& file_name) -> const float* {
      const io::SafetensorsFile& f = file_of(r, file_name);
      const io::SafetensorsEntry* t = f.find(file_name);
      if (t->dtype != "F32") return nullptr;
      const std::byte* b = f.bytes(*t).data();
      return reinterpret_cast<uintptr_t>(b) % alignof(float) == 0
                 ? reinterpret_cast<const float*>(b)
                 : nullptr;
    };
    bool in_place = true;
    for (const auto& [e, name] : r.params) {
      const float* v = view(name);
      in_place = in_place && v != nullptr;
      views[e.name] = v;
    }
    const float* head = nullptr;
    if (in_place && r.src->where.count("lm_head.weight")) {
      const io::SafetensorsEntry* t = file_of(r, "lm_head.weight").find("lm_head.weight");
      check(t->shape == Shape{r.config.vocab_size, r.config.n_embd}, r.where,
            ": tensor lm_head.weight: shape ", shape_str(t->shape));
      head = view("lm_head.weight");
      in_place = head != nullptr;
      const float* wte = views.at("wte.weight");
      if (head &&
          std::equal(head, head + static_cast<size_t>(r.config.vocab_size) * r.config.n_embd,
                     wte)) {
        head = nullptr;  // tied after all
      }
    }
    if (in_place) {
      // The weights are read at load, as a converting load reads them, rather than page by
      // page during the first generation.
      for (const auto& [e, name] : r.params)
        file_of(r, name).populate(*file_of(r, name).find(name));
      if (head)
        file_of(r, "lm_head.weight").populate(*file_of(r, "lm_head.weight").find("lm_head.weight"));
      return gpt2::Model::from_f32_views(
          r.config, [&](const std::string& n) { return views.at(n); }, r.src, head);
    }
  }
  // Read and convert tensor by tensor, dropping each one's mapped pages once it is read, so
  // peak memory stays near the converted weights.
  const Resolved r = resolve(model, config_path);
  std::map<std::string, std::string> file_name;
  for (const auto& [e, name] : r.params) file_name[e.name] = name;
  bool untied = false;
  if (r.src->where.count("lm_head.weight")) {
    const io::SafetensorsEntry* head = file_of(r, "lm_head.weight").find("lm_head.weight");
    const io::SafetensorsEntry* wte =
        file_of(r, file_name.at("wte.weight")).find(file_name.at("wte.weight"));
    check(head->shape == wte->shape, r.where, ": tensor lm_head.weight: shape ",
          shape_str(head->shape), " (expected ", shape_str(wte->shape), ")");
    const auto a = file_of(r, "lm_head.weight").bytes(*head);
    const auto b = file_of(r, file_name.at("wte.weight")).bytes(*wte);
    untied = head->dtype != wte->dtype || !std::equal(a.begin(), a.end(), b.begin(), b.end());
    file_name["lm_head.weight"] = "lm_head.weight";
  }
  const auto read = [&](const std::string& name, DType to, void* out, size_t numel, size_t first) {
    const std::string& n = file_name.at(name);
    file_of(r, n).read_range_into(n, to, out, first, numel, io::SafetensorsFile::DropPages::Yes);
  };
  return gpt2::Model::from_reader(r.config, dtype, read, untied);
}

void save_gpt2(const std::string& dir, const gpt2::Config& config, std::span<const float> params,
               std::span<const float> lm_head) {
  const ParamLayout layout = gpt2::param_layout(config);
  check(params.size() == layout.size(), dir, ": ", params.size(),
        " parameters, the configuration has ", layout.size());
  const Shape head_shape{config.vocab_size, config.n_embd};
  check(lm_head.empty() || lm_head.size() == layout.at("wte.weight").numel, dir,
        ": an output head of ", lm_head.size(), " values for ", shape_str(head_shape));
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, dir, ": cannot create directory: ", ec.message());
  // The causal mask buffer Hugging Face stores per layer: lower-triangular ones.
  const int64_t P = config.n_positions;
  std::vector<float> mask(static_cast<size_t>(P * P), 0.0f);
  for (int64_t i = 0; i < P; ++i) {
    for (int64_t j = 0; j <= i; ++j) mask[i * P + j] = 1.0f;
  }
  std::vector<io::SafetensorsWriteEntry> tensors;
  for (const ParamEntry& e : layout.entries()) {
    tensors.push_back({e.name, "F32", e.shape, std::as_bytes(params.subspan(e.offset, e.numel))});
    if (e.name.ends_with(".ln_1.bias")) {
      const std::string h = e.name.substr(0, e.name.size() - std::string("ln_1.bias").size());
      tensors.push_back({h + "attn.bias", "F32", {1, 1, P, P}, std::as_bytes(std::span(mask))});
    }
  }
  if (!lm_head.empty())
    tensors.push_back({"lm_head.weight", "F32", head_shape, std::as_bytes(lm_head)});
  write_gpt2_config_json((fs::path(dir) / "config.json").string(), config);
  io::write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors,
                        {{"format", "pt"}});
}

uint64_t gpt2_saved_bytes(const gpt2::Config& config) {
  const uint64_t P = static_cast<uint64_t>(config.n_positions);
  return 4 * (gpt2::param_layout(config).size() + static_cast<uint64_t>(config.n_layer) * P * P);
}

void save_gpt2_weights_like(const std::string& source, const std::string& out,
                            const gpt2::Config& config, std::span<const float> params) {
  const ParamLayout layout = gpt2::param_layout(config);
  check(params.size() == layout.size(), out, ": ", params.size(),
        " parameters, the configuration has ", layout.size());
  check(fs::path(source).extension() != ".json", source,
        ": saving weights like a sharded checkpoint is not supported; give the single .safetensors "
        "file");
  const io::SafetensorsFile src = io::SafetensorsFile::open(source);
  const ParamEntry& wte = layout.at("wte.weight");
  std::vector<std::vector<std::byte>> converted;  // storage for tensors not written as-is
  converted.reserve(src.entries().size());
  std::vector<io::SafetensorsWriteEntry> tensors;
  size_t written = 0;
  for (const io::SafetensorsEntry& t : src.entries()) {
    std::string name = t.name;
    if (name.starts_with("transformer.")) name = name.substr(std::string("transformer.").size());
    const ParamEntry* e = layout.find(name);
    if (name == "lm_head.weight") {
      const std::vector<float> head = src.read_f32(t.name, wte.shape);
      const std::vector<float> old_wte =
          src.read_f32(src.find("wte.weight") ? "wte.weight" : "transformer.wte.weight");
      check(head == old_wte, source,
            ": lm_head.weight is untied from wte; training keeps the head tied");
      e = &wte;
    }
    if (e == nullptr) {  // a buffer: copied through
      tensors.push_back({t.name, t.dtype, t.shape, src.bytes(t)});
      continue;
    }
    check(t.shape == e->shape, source, ": tensor ", t.name, ": shape ", shape_str(t.shape),
          " (expected ", shape_str(e->shape), ")");
    const std::span<const float> values = params.subspan(e->offset, e->numel);
    std::vector<std::byte>& bytes = converted.emplace_back();
    if (t.dtype == "F32") {
      const auto b = std::as_bytes(values);
      bytes.assign(b.begin(), b.end());
    } else {
      check(t.dtype == "F16" || t.dtype == "BF16", source, ": tensor ", t.name,
            ": cannot write dtype ", t.dtype);
      std::vector<uint16_t> half(values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        half[i] = t.dtype == "F16" ? float_to_f16(values[i]) : float_to_bf16(values[i]);
      }
      const auto b = std::as_bytes(std::span(half));
      bytes.assign(b.begin(), b.end());
    }
    tensors.push_back({t.name, t.dtype, t.shape, bytes});
    if (name != "lm_head.weight") ++written;
  }
  check(written == layout.entries().size(), source, ": holds ", written, " of the ",
        layout.entries().size(), " GPT-2 parameter tensors");
  io::write_safetensors(out, tensors, src.metadata());
}

}  // namespace tinylm::checkpoints
