#include "evermind_common.h"

#include <algorithm>
#include <filesystem>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/core/error.h"

namespace tinylm::cli {

std::string default_evermind_tokenizer_path(const std::string& model_path) {
  return std::filesystem::path(model_path).replace_extension(".tokenizer.json").string();
}

evermind::Model<float> load_evermind(const std::string& path, int64_t max_seq_len) {
  const checkpoints::EvlCheckpoint ck =
      checkpoints::load_evl(path);  // checks the count against the config
  return evermind::Model<float>(ck.config, max_seq_len, ck.params);
}

BpeTokenizer load_evermind_tokenizer(const std::string& explicit_path,
                                     const std::string& model_path) {
  const std::string path =
      explicit_path.empty() ? default_evermind_tokenizer_path(model_path) : explicit_path;
  if (std::filesystem::is_directory(path)) return BpeTokenizer::from_directory(path);
  check(std::filesystem::exists(path), path, ": no such tokenizer file (pass --tokenizer)");
  return BpeTokenizer::from_tokenizer_json(path);
}

}  // namespace tinylm::cli
