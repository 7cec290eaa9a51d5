#include "tinylm/train/gpt2_checkpoint.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tinylm/core/error.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/safetensors.h"
#include "tinylm/io/text_file.h"

namespace tinylm::train {

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

Gpt2Checkpoint load_gpt2(const std::string& model, const std::string& config_path) {
  const fs::path p(model);
  check(fs::exists(p), model, ": no such file or directory");
  const fs::path weights = fs::is_directory(p) ? find_weights(p) : p;
  const fs::path cfg = !config_path.empty() ? fs::path(config_path)
                                            : weights.parent_path() / "config.json";
  Gpt2Checkpoint ck;
  ck.config = gpt2::read_config_json(cfg.string());
  const TensorSource src = open_tensors(weights);
  const std::string where = weights.string();

  const ParamLayout layout = gpt2::param_layout(ck.config);
  std::vector<std::string> missing, misshapen;
  std::vector<std::pair<const ParamEntry*, std::string>> found;  // entry, name in file
  for (const ParamEntry& e : layout.entries()) {
    std::string name = e.name;
    if (!src.where.count(name)) name = "transformer." + e.name;
    if (!src.where.count(name)) {
      missing.push_back(e.name);
      continue;
    }
    const io::SafetensorsEntry* t = src.files[src.where.at(name)].find(name);
    if (t->shape != e.shape) {
      misshapen.push_back(name + " " + shape_str(t->shape) + " (expected " + shape_str(e.shape) + ")");
      continue;
    }
    found.push_back({&e, name});
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  check(missing.empty(), where, ": missing tensors: ", join(missing));
  check(misshapen.empty(), where, ": wrong shapes: ", join(misshapen));

  ck.params.resize(layout.size());
  for (const auto& [e, name] : found) {
    src.files[src.where.at(name)].read_f32_into(name, std::span(ck.params).subspan(e->offset, e->numel));
  }
  if (src.where.count("lm_head.weight")) {
    const Shape want{ck.config.vocab_size, ck.config.n_embd};
    std::vector<float> head = src.files[src.where.at("lm_head.weight")].read_f32("lm_head.weight", want);
    const ParamEntry& wte = layout.at("wte.weight");
    if (!std::equal(head.begin(), head.end(), ck.params.begin() + static_cast<std::ptrdiff_t>(wte.offset))) {
      ck.lm_head = std::move(head);
    }
  }
  return ck;
}

void save_gpt2(const std::string& dir, const gpt2::Config& config, std::span<const float> params) {
  const ParamLayout layout = gpt2::param_layout(config);
  check(params.size() == layout.size(), dir, ": ", params.size(), " parameters, the configuration has ",
        layout.size());
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
  gpt2::write_config_json((fs::path(dir) / "config.json").string(), config);
  io::write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
}

}  // namespace tinylm::train
