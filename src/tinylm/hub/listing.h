#pragma once
// A Hub repository's listing (its API's revision and tree answers) and the files of it a model
// needs: config, tokenizer and one set of weights (safetensors, else one GGUF); never
// pytorch_model.bin, TensorFlow, Flax or ONNX files.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::hub {

struct RepoFile {
  std::string path;        // "model.safetensors", "onnx/model.onnx"
  uint64_t size = 0;       // bytes
  std::string oid;         // the git blob id (a small file's ETag)
  std::string lfs_sha256;  // an LFS file's sha256 (its ETag); empty for a small file
};

// `s` is `length` lower-case hex digits (a commit id: 40, a sha256: 64).
bool is_lower_hex(const std::string& s, size_t length);

// The commit sha of GET /api/models/{repo}/revision/{rev}: {"sha": "<40 hex>", ...}. Throws a
// one-line Error naming `what` (the URL) and the field.
std::string parse_revision_json(std::string_view text, const std::string& what);

// The files of GET /api/models/{repo}/tree/{rev}: [{"type": "file" | "directory", "oid", "size",
// "path", "lfs": {"oid", "size"}?}, ...]; directories are skipped.
std::vector<RepoFile> parse_tree_json(std::string_view text, const std::string& what);

// The files of `listing` a model needs: config.json, generation_config.json, the tokenizer's
// files (tokenizer.json, tokenizer_config.json, vocab.json, merges.txt: whichever exist), and the
// weights: model.safetensors, else model.safetensors.index.json with its model-*-of-*.safetensors
// shards, else the one .gguf. `include` (a glob, empty for none) narrows the weights to the
// safetensors/GGUF files it matches. Throws Error naming `repo` when no weights are found, when
// several GGUFs remain (naming them), or when safetensors come without config.json.
std::vector<RepoFile> choose_model_files(const std::vector<RepoFile>& listing,
                                         const std::string& include, const std::string& repo);

}  // namespace tinylm::hub
