// The list of families and the lookups over it. A new family: its record in its own file
// (gpt2.cpp is the model) and one line in each list below.
#include <filesystem>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/families/family.h"

namespace tinylm::families {

extern const Family gpt2_family;
extern const Family evermind_family;
extern const Family microgpt_family;

const std::vector<const Family*>& all() {
  static const std::vector<const Family*> table = {&gpt2_family, &evermind_family,
                                                   &microgpt_family};
  return table;
}

const train::TrainFamilies& trainable() {
  static const train::TrainFamilies table = [] {
    std::vector<train::TrainFamilies::Entry> entries;
    for (const Family* f : those(trains)) entries.push_back({f->name, &f->training});
    return train::TrainFamilies(std::move(entries));
  }();
  return table;
}

BpeTokenizer tokenizer_from_path(const std::string& path) {
  if (std::filesystem::is_directory(path)) return BpeTokenizer::from_directory(path);
  check(std::filesystem::exists(path), path, ": no such tokenizer file (pass --tokenizer)");
  return BpeTokenizer::from_tokenizer_json(path);
}

std::vector<const Family*> those(bool (*accepts)(const Family&)) {
  std::vector<const Family*> out;
  for (const Family* f : all())
    if (accepts(*f)) out.push_back(f);
  return out;
}

const Family* by_name(std::string_view name) {
  for (const Family* f : all())
    if (f->name == name) return f;
  return nullptr;
}

std::vector<std::string> names(const std::vector<const Family*>& families) {
  std::vector<std::string> out;
  for (const Family* f : families) out.emplace_back(f->name);
  return out;
}

std::string names_text(const std::vector<const Family*>& families) {
  std::string out;
  for (const Family* f : families) out += (out.empty() ? "" : " or ") + std::string(f->name);
  return out;
}

Detected detect(const std::string& path) {
  Detected d;
  static_cast<checkpoints::Sniffed&>(d) = checkpoints::sniff(path);
  for (const Family* f : all()) {
    if (const char* words = f->recognise(d)) {
      d.family = f;
      d.what = words;
      return d;
    }
  }
  // A directory's lone model.safetensors that no family claims: the directory is what was
  // named, and it holds nothing tinylm runs.
  if (!d.directory.empty()) {
    Detected none;
    none.path = d.directory;
    none.what = "a directory without a model tinylm knows";
    return none;
  }
  d.foreign = d.gguf_architecture && !d.gguf_architecture->empty();
  return d;
}

}  // namespace tinylm::families
