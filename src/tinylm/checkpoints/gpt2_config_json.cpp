#include "tinylm/checkpoints/gpt2_config_json.h"

#include <nlohmann/json.hpp>

#include "tinylm/core/error.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/text_file.h"

namespace tinylm::checkpoints {

namespace {
int get_int(const nlohmann::ordered_json& j, const char* key, const std::string& path) {
  const auto it = j.find(key);
  check(it != j.end(), path, ": missing '", key, "'");
  check(it->is_number_integer(), path, ": '", key, "' must be an integer");
  const int64_t v = it->get<int64_t>();
  check(v >= INT32_MIN && v <= INT32_MAX, path, ": '", key, "' out of range");
  return static_cast<int>(v);
}
}  // namespace

gpt2::Config read_gpt2_config_json(const std::string& path) {
  const nlohmann::ordered_json j = io::parse_json_strict(io::read_file(path), path);
  check(j.is_object(), path, ": not a JSON object");
  gpt2::Config c;
  c.vocab_size = get_int(j, "vocab_size", path);
  c.n_positions =
      j.contains("n_positions") ? get_int(j, "n_positions", path) : get_int(j, "n_ctx", path);
  c.n_embd = get_int(j, "n_embd", path);
  c.n_layer = get_int(j, "n_layer", path);
  c.n_head = get_int(j, "n_head", path);
  if (j.contains("n_inner") && !j["n_inner"].is_null()) c.n_inner = get_int(j, "n_inner", path);
  if (j.contains("layer_norm_epsilon")) {
    check(j["layer_norm_epsilon"].is_number(), path, ": 'layer_norm_epsilon' must be a number");
    c.layer_norm_epsilon = j["layer_norm_epsilon"].get<double>();
  }
  const std::string act = j.contains("activation_function") && j["activation_function"].is_string()
                              ? j["activation_function"].get<std::string>()
                              : "gelu_new";
  check(act == "gelu_new" || act == "gelu_pytorch_tanh", path,
        ": unsupported activation_function '", act, "' (GPT-2 uses the tanh GELU, gelu_new)");
  try {
    c.validate();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  return c;
}

void write_gpt2_config_json(const std::string& path, const gpt2::Config& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  j["vocab_size"] = c.vocab_size;
  j["n_positions"] = c.n_positions;
  j["n_ctx"] = c.n_positions;
  j["n_embd"] = c.n_embd;
  j["n_layer"] = c.n_layer;
  j["n_head"] = c.n_head;
  j["n_inner"] =
      c.n_inner > 0 ? nlohmann::ordered_json(c.n_inner) : nlohmann::ordered_json(nullptr);
  j["activation_function"] = "gelu_new";
  j["layer_norm_epsilon"] = c.layer_norm_epsilon;
  j["initializer_range"] = 0.02;
  j["resid_pdrop"] = 0.1;
  j["embd_pdrop"] = 0.1;
  j["attn_pdrop"] = 0.1;
  j["bos_token_id"] = c.vocab_size - 1;
  j["eos_token_id"] = c.vocab_size - 1;
  const std::string text = j.dump(2) + "\n";
  io::AtomicFile out(path);
  out.write(std::as_bytes(std::span(text.data(), text.size())));
  out.commit();
}

}  // namespace tinylm::checkpoints
