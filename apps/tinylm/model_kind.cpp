#include "model_kind.h"

#include "tinylm/core/error.h"

namespace tinylm::cli {

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

}  // namespace

DetectedModel resolve_model(const std::string& command, const std::string& path,
                            const std::string& arch, std::initializer_list<ModelKind> accepted) {
  DetectedModel d = checkpoints::sniff(path);
  check(d.format != checkpoints::Format::missing, path, ": no such file or directory");
  std::string expected;
  for (ModelKind k : accepted)
    expected += std::string(expected.empty() ? "" : " or ") + expected_text(k);
  bool ok = false;
  for (ModelKind k : accepted) ok = ok || d.family == k;
  if (!arch.empty()) {
    if (d.family == ModelKind::unknown) {  // the loader of that kind says what is wrong
      for (ModelKind k : accepted)
        if (arch == checkpoints::family_name(k)) d.family = k;
      return d;
    }
    check(arch == checkpoints::family_name(d.family), path, ": this is ", d.what, ", but --arch ",
          arch, " expects ",
          arch == "gpt2"       ? expected_text(ModelKind::gpt2)
          : arch == "evermind" ? expected_text(ModelKind::evermind)
                               : "another kind");
  }
  check(ok, path, ": this is ", d.what, "; ", command, " expects ", expected);
  return d;
}

}  // namespace tinylm::cli
